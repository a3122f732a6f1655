#!/usr/bin/env python3
"""A default ROS 2 subscriber of surfcl-node's outputs, timing each from the node's publish.

Publishes camera frames (sensor_msgs/Image, mono8, a photo tiled to the requested size) on
`image` and subscribes to `keypoints` and `debug_image` the way any ROS 2 node does: rclpy,
the default QoS profile (reliable, keep last 10, as the node's reliable outputs), raw
subscriptions (so Python's own decoding is not counted), no XML profile, default sockets.

Latency of a sample = the subscriber's callback time - the sample's DDS source timestamp (the
time the node's writer took the sample, CLOCK_REALTIME on the same machine). A frame whose
output never arrives within --settle seconds after the last frame is counted as lost.
Prints one JSON line: per topic count, lost, p50/p90/max ms (and the transport's share:
received - source timestamp, as the RMW reports it).
"""
import argparse
import json
import struct
import sys
import time

import numpy as np
import rclpy
from rclpy.qos import QoSProfile, ReliabilityPolicy, HistoryPolicy
from sensor_msgs.msg import Image
from surfcl_msgs.msg import KeypointArray, MatchArray

import pgm
from latency_report import percentile, print_report


def read_pgm(path):
    """The PGM photo at `path` as a (height, width) uint8 array."""
    w, h, pixels = pgm.read_pgm(path)
    return np.frombuffer(pixels, dtype=np.uint8, count=w * h).reshape(h, w)


def tiled(photo, width, height):
    reps = (-(-height // photo.shape[0]), -(-width // photo.shape[1]))
    return np.ascontiguousarray(np.tile(photo, reps)[:height, :width])


def stamp_of(raw):
    """(sec, nanosec) of a serialized message whose first field is a std_msgs/Header."""
    little = raw[1] == 1  # CDR encapsulation: 0x0001 = little endian
    sec, nsec = struct.unpack_from("<iI" if little else ">iI", raw, 4)
    return sec, nsec


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--image", required=True, help="PGM photo tiled into each frame")
    ap.add_argument("--size", default="1920x1080")
    ap.add_argument("--frames", type=int, default=20)
    ap.add_argument("--hz", type=float, default=2.0)
    ap.add_argument("--topics", default="keypoints,debug_image")
    ap.add_argument("--discovery-timeout", type=float, default=30.0)
    ap.add_argument("--settle", type=float, default=10.0)
    args = ap.parse_args()
    width, height = (int(v) for v in args.size.split("x"))
    frame = tiled(read_pgm(args.image), width, height)
    topics = [t for t in args.topics.split(",") if t]

    rclpy.init()
    node = rclpy.create_node("surfcl_latency_probe")
    pub = node.create_publisher(Image, "image", 10)
    received = {t: {} for t in topics}  # topic -> stamp -> (latency ms, transport ms)

    def on_sample(topic):
        def callback(raw, info):
            now_ns = time.time_ns()
            src = info["source_timestamp"]
            rcv = info["received_timestamp"]
            received[topic][stamp_of(raw)] = ((now_ns - src) / 1e6, (rcv - src) / 1e6,
                                              info["publication_sequence_number"])
        return callback

    qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE,
                     history=HistoryPolicy.KEEP_LAST)
    types = {"keypoints": KeypointArray, "matches": MatchArray, "debug_image": Image}
    subs = [node.create_subscription(types[t], t, on_sample(t), qos, raw=True) for t in topics]

    deadline = time.monotonic() + args.discovery_timeout
    while time.monotonic() < deadline:
        rclpy.spin_once(node, timeout_sec=0.05)
        if pub.get_subscription_count() > 0 and all(
                node.count_publishers(t) > 0 for t in topics):
            break
    else:
        print(json.dumps({"ok": False, "error": "discovery timed out",
                          "image_subscribers": pub.get_subscription_count(),
                          "publishers": {t: node.count_publishers(t) for t in topics}}))
        return 1
    # Discovery of the node's readers by the publisher's writer (and the reverse) may lag the
    # graph by a few ms: give it a moment so the first frame is not dropped on the way in.
    t_end = time.monotonic() + 1.0
    while time.monotonic() < t_end:
        rclpy.spin_once(node, timeout_sec=0.05)

    sent = []
    period = 1.0 / args.hz
    next_t = time.monotonic()
    # One message, its pixels converted once: only the stamp changes, so that the probe's own
    # work between callbacks stays small.
    msg = Image()
    msg.header.frame_id = "camera"
    msg.height, msg.width, msg.encoding, msg.step = height, width, "mono8", width
    msg.data = frame.tobytes()
    for i in range(args.frames):
        now = time.time_ns()
        msg.header.stamp.sec, msg.header.stamp.nanosec = now // 10**9, now % 10**9
        pub.publish(msg)
        sent.append((msg.header.stamp.sec, msg.header.stamp.nanosec))
        next_t += period
        while time.monotonic() < next_t:
            rclpy.spin_once(node, timeout_sec=max(0.0, min(0.01, next_t - time.monotonic())))
    t_end = time.monotonic() + args.settle
    while time.monotonic() < t_end and not all(
            all(s in received[t] for s in sent) for t in topics):
        rclpy.spin_once(node, timeout_sec=0.05)

    # Frames the node did not publish (it drops a frame that waits while the one before is
    # processed) are not losses. A sample is lost when the writer's sequence numbers of the
    # received samples have a gap, or when another output of the same frame arrived.
    published = set().union(*(received[t].keys() for t in topics))
    result = {"ok": True, "size": args.size, "frames_sent": len(sent),
              "frames_published": len(published), "topics": {}}
    for t in topics:
        got = received[t]
        lat = [v[0] for v in got.values()]
        net = [v[1] for v in got.values()]
        seqs = sorted(v[2] for v in got.values())
        gaps = (seqs[-1] - seqs[0] + 1 - len(seqs)) if seqs else 0
        r = {"count": len(lat), "lost": max(gaps, len(published - got.keys()))}
        if lat:
            r.update(p50_ms=round(percentile(lat, 0.5), 2), p90_ms=round(percentile(lat, 0.9), 2),
                     max_ms=round(max(lat), 2), transport_p50_ms=round(percentile(net, 0.5), 2),
                     all_ms=[round(v, 1) for v in lat])
        result["topics"][t] = r
    print_report(result, args.size)
    node.destroy_node()
    rclpy.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
