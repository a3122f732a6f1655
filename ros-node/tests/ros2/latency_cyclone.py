#!/usr/bin/env python3
"""latency.py's measurement with a default Eclipse Cyclone DDS subscriber (the peer venv:
ros-node/tests/peer/setup.sh): reliable, keep last 10, Cyclone's default socket buffers; the
configuration only keeps discovery on loopback (as peer.py's). The output types are declared
down to their header: the rest of each sample is received and reassembled but not decoded by
Python, as latency.py's raw subscriptions. Same arguments and output lines as latency.py.
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "peer"))
# First: importing peer sets its loopback-only CYCLONEDDS_URI (unless one is set) before
# cyclonedds is imported.
from peer import Header, Image, Time, read_pgm, tiled_frame  # noqa: E402

from cyclonedds.core import Policy, Qos  # noqa: E402
from cyclonedds.domain import DomainParticipant  # noqa: E402
from cyclonedds.idl import IdlStruct  # noqa: E402
from cyclonedds.pub import DataWriter  # noqa: E402
from cyclonedds.sub import DataReader  # noqa: E402
from cyclonedds.topic import Topic  # noqa: E402
from cyclonedds.util import duration  # noqa: E402
from dataclasses import dataclass  # noqa: E402

from latency_report import percentile, print_report  # noqa: E402


@dataclass
class KeypointArrayHead(IdlStruct, typename="surfcl_msgs::msg::dds_::KeypointArray_"):
    header: Header


@dataclass
class ImageHead(IdlStruct, typename="sensor_msgs::msg::dds_::Image_"):
    header: Header


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--domain", type=int, required=True)
    ap.add_argument("--image", required=True)
    ap.add_argument("--size", default="1920x1080")
    ap.add_argument("--frames", type=int, default=20)
    ap.add_argument("--hz", type=float, default=2.0)
    ap.add_argument("--settle", type=float, default=10.0)
    args = ap.parse_args()
    width, height = (int(v) for v in args.size.split("x"))
    w0, h0, px = read_pgm(args.image)
    data, step = tiled_frame(w0, h0, px, width, height, "mono8"), width

    dp = DomainParticipant(args.domain)
    qos = Qos(Policy.Reliability.Reliable(duration(seconds=1)), Policy.History.KeepLast(10))
    img_w = DataWriter(dp, Topic(dp, "rt/image", Image), qos=qos)
    readers = {"keypoints": DataReader(dp, Topic(dp, "rt/keypoints", KeypointArrayHead), qos=qos),
               "debug_image": DataReader(dp, Topic(dp, "rt/debug_image", ImageHead), qos=qos)}
    deadline = time.monotonic() + 30
    while not (img_w.get_matched_subscriptions()
               and all(r.get_matched_publications() for r in readers.values())):
        if time.monotonic() > deadline:
            print(json.dumps({"ok": False, "error": "discovery timed out"}))
            return 1
        time.sleep(0.02)
    time.sleep(1.0)
    received = {t: {} for t in readers}

    def poll():
        for t, r in readers.items():
            for s in r.take(N=20):
                now = time.time_ns()
                src = s.sample_info.source_timestamp
                received[t][(s.header.stamp.sec, s.header.stamp.nanosec)] = (now - src) / 1e6

    next_t = time.monotonic()
    for _ in range(args.frames):
        now = time.time_ns()
        img_w.write(Image(Header(Time(now // 10**9, now % 10**9), "camera"), height, width,
                          "mono8", 0, step, data))
        next_t += 1.0 / args.hz
        while time.monotonic() < next_t:
            poll()
            time.sleep(0.0005)
    t_end = time.monotonic() + args.settle
    published = set()
    while time.monotonic() < t_end:
        poll()
        published = set().union(*(v.keys() for v in received.values()))
        if all(len(v) == len(published) for v in received.values()) and published:
            break
        time.sleep(0.0005)
    result = {"ok": True, "subscriber": "cyclonedds", "size": args.size, "topics": {}}
    for t, got in received.items():
        lat = list(got.values())
        r = {"count": len(lat), "lost": len(published - got.keys())}
        if lat:
            r.update(p50_ms=round(percentile(lat, 0.5), 2), max_ms=round(max(lat), 2),
                     all_ms=[round(v, 1) for v in lat])
        result["topics"][t] = r
    print_report(result, args.size)
    return 0


if __name__ == "__main__":
    sys.exit(main())
