#!/usr/bin/env python3
"""Independent DDS peer for surfcl-node (Eclipse Cyclone DDS, `pip install cyclonedds==11.0.1`).

Declares the ROS 2 types on the DDS level (RustDDS publishes no XTypes type information), then:
  1. publishes a mono8 image and receives its keypoints and matches,
  2. publishes the same picture as rgb8 (R = G = B, so luminance = gray) and checks that the
     keypoints are identical and that the frame matches the previous one,
  3. sets `max_keypoints` through the standard rcl_interfaces SetParameters service, checks that
     a bad value (`octaves` = 9) is refused with a reason, and sees the new limit on the next frame.
Prints one JSON line with what it saw; exits 0 on success, 1 with a message on failure.
Stays on loopback: Cyclone is configured with the `lo` interface, no multicast, peer 127.0.0.1.
"""
import argparse
import json
import os
import sys
import time
from dataclasses import dataclass

os.environ.setdefault(
    "CYCLONEDDS_URI",
    "<CycloneDDS><Domain Id='any'><General><Interfaces><NetworkInterface name='lo'/></Interfaces>"
    "<AllowMulticast>false</AllowMulticast></General><Discovery><Peers><Peer Address='127.0.0.1'/>"
    "</Peers><ParticipantIndex>auto</ParticipantIndex><MaxAutoParticipantIndex>60</MaxAutoParticipantIndex>"
    "</Discovery></Domain></CycloneDDS>",
)

from cyclonedds.core import Policy, Qos  # noqa: E402
from cyclonedds.domain import DomainParticipant  # noqa: E402
from cyclonedds.idl import IdlStruct  # noqa: E402
from cyclonedds.idl.types import float32, float64, int8, int32, int64, sequence, uint8, uint32  # noqa: E402
from cyclonedds.pub import DataWriter  # noqa: E402
from cyclonedds.sub import DataReader  # noqa: E402
from cyclonedds.topic import Topic  # noqa: E402
from cyclonedds.util import duration  # noqa: E402

# The PGM reader the rclpy probes use too (no third-party import).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ros2"))
from pgm import read_pgm  # noqa: E402


@dataclass
class Time(IdlStruct, typename="builtin_interfaces::msg::dds_::Time_"):
    sec: int32
    nanosec: uint32


@dataclass
class Header(IdlStruct, typename="std_msgs::msg::dds_::Header_"):
    stamp: Time
    frame_id: str


@dataclass
class Image(IdlStruct, typename="sensor_msgs::msg::dds_::Image_"):
    header: Header
    height: uint32
    width: uint32
    encoding: str
    is_bigendian: uint8
    step: uint32
    data: sequence[uint8]


@dataclass
class Keypoint(IdlStruct, typename="surfcl_msgs::msg::dds_::Keypoint_"):
    x: float32
    y: float32
    scale: float32
    orientation: float32
    response: float32
    laplacian: int8


@dataclass
class KeypointArray(IdlStruct, typename="surfcl_msgs::msg::dds_::KeypointArray_"):
    header: Header
    keypoints: sequence[Keypoint]
    descriptors: sequence[float32]
    descriptors_q7: sequence[int8]
    descriptor_length: uint32
    dropped: uint32


@dataclass
class Match(IdlStruct, typename="surfcl_msgs::msg::dds_::Match_"):
    query: uint32
    train: uint32
    distance: float32


@dataclass
class MatchArray(IdlStruct, typename="surfcl_msgs::msg::dds_::MatchArray_"):
    header: Header
    previous_header: Header
    matches: sequence[Match]


@dataclass
class ParameterValue(IdlStruct, typename="rcl_interfaces::msg::dds_::ParameterValue_"):
    type: uint8
    bool_value: bool
    integer_value: int64
    double_value: float64
    string_value: str
    byte_array_value: sequence[uint8]
    bool_array_value: sequence[bool]
    integer_array_value: sequence[int64]
    double_array_value: sequence[float64]
    string_array_value: sequence[str]


@dataclass
class Parameter(IdlStruct, typename="rcl_interfaces::msg::dds_::Parameter_"):
    name: str
    value: ParameterValue


@dataclass
class SetParametersRequest(IdlStruct, typename="rcl_interfaces::srv::dds_::SetParameters_Request_"):
    parameters: sequence[Parameter]


@dataclass
class SetParametersResult(IdlStruct, typename="rcl_interfaces::msg::dds_::SetParametersResult_"):
    successful: bool
    reason: str


@dataclass
class SetParametersResponse(IdlStruct, typename="rcl_interfaces::srv::dds_::SetParameters_Response_"):
    results: sequence[SetParametersResult]


def fail(msg):
    print(json.dumps({"ok": False, "error": msg}), flush=True)
    sys.exit(1)


def half(w, h, px):
    w2, h2 = w // 2, h // 2
    out = bytearray(w2 * h2)
    for y in range(h2):
        r0, r1 = 2 * y * w, (2 * y + 1) * w
        for x in range(w2):
            s = px[r0 + 2 * x] + px[r0 + 2 * x + 1] + px[r1 + 2 * x] + px[r1 + 2 * x + 1]
            out[y * w2 + x] = (s + 2) // 4
    return w2, h2, bytes(out)


def int_param(name, value):
    return Parameter(name, ParameterValue(2, False, value, 0.0, "", [], [], [], [], []))


def tiled_frame(w0, h0, px, width, height, encoding):
    """A `width x height` frame tiled from the gray picture, as mono8 or rgb8 (R = G = B) bytes."""
    rows = []
    for y in range(height):
        src = px[(y % h0) * w0 : (y % h0 + 1) * w0]
        row = (src * (width // w0 + 1))[:width]
        if encoding == "rgb8":
            rgb = bytearray(3 * width)
            rgb[0::3] = row
            rgb[1::3] = row
            rgb[2::3] = row
            row = bytes(rgb)
        rows.append(row)
    return b"".join(rows)


def large(args):
    """Publishes each of --frames (WxH:encoding) once a second until its keypoints come back."""
    deadline = time.monotonic() + args.timeout
    w0, h0, px = read_pgm(args.image)
    dp = DomainParticipant(args.domain)
    reliable = Qos(Policy.Reliability.Reliable(duration(seconds=1)), Policy.History.KeepLast(1))
    img_w = DataWriter(dp, Topic(dp, "rt/image", Image), qos=reliable)
    kp_r = DataReader(dp, Topic(dp, "rt/keypoints", KeypointArray), qos=reliable)
    while not (img_w.get_matched_subscriptions() and kp_r.get_matched_publications()):
        if time.monotonic() > deadline:
            fail("discovery of surfcl-node timed out")
        time.sleep(0.05)
    results = []
    for sec, spec in enumerate(args.frames.split(","), start=1):
        size, encoding = spec.split(":")
        width, height = (int(v) for v in size.split("x"))
        data = tiled_frame(w0, h0, px, width, height, encoding)
        step = width * (3 if encoding == "rgb8" else 1)
        msg = Image(Header(Time(sec, 0), "peer_camera"), height, width, encoding, 0, step, data)
        sends, kp, t0 = 0, None, time.monotonic()
        while kp is None:
            if time.monotonic() > deadline:
                fail(f"no keypoints for the {width}x{height} {encoding} frame after {sends} sends")
            img_w.write(msg)
            sends += 1
            until = time.monotonic() + args.resend_s
            while kp is None and time.monotonic() < until:
                for s in kp_r.take(N=10):
                    if s.header.stamp.sec == sec:
                        kp = s
                time.sleep(0.005)
        results.append(
            {
                "frame": f"{width}x{height} {encoding}",
                "bytes": len(data),
                "sends": sends,
                "seconds": round(time.monotonic() - t0, 3),
                "keypoints": len(kp.keypoints),
                "descriptors_ok": len(kp.descriptors) == 64 * len(kp.keypoints),
            }
        )
        if not kp.keypoints or len(kp.descriptors) != 64 * len(kp.keypoints):
            fail(f"bad keypoints for {spec}: {results[-1]}")
    print(json.dumps({"ok": True, "large": results}), flush=True)


def shutdown(args):
    """Waits for the node's writers, says READY, then (once --signal-file exists, written just
    before the node is signalled) measures how long until the node's writers are gone."""
    deadline = time.monotonic() + args.timeout
    dp = DomainParticipant(args.domain)
    reliable = Qos(Policy.Reliability.Reliable(duration(seconds=1)), Policy.History.KeepLast(10))
    kp_r = DataReader(dp, Topic(dp, "rt/keypoints", KeypointArray), qos=reliable)
    m_r = DataReader(dp, Topic(dp, "rt/matches", MatchArray), qos=reliable)
    img_w = DataWriter(dp, Topic(dp, "rt/image", Image), qos=reliable)
    while not (kp_r.get_matched_publications() and m_r.get_matched_publications() and img_w.get_matched_subscriptions()):
        if time.monotonic() > deadline:
            fail("discovery of surfcl-node timed out")
        time.sleep(0.05)
    print("READY", flush=True)
    # The file holds the wall-clock time (s) at which the node was signalled, so that a peer
    # that is slow to notice the file still measures from the signal.
    t0 = None
    while t0 is None:
        if time.monotonic() > deadline:
            fail("the node was never signalled")
        try:
            with open(args.signal_file) as f:
                t0 = float(f.read().strip())
        except (OSError, ValueError):
            time.sleep(0.005)
    gone = {}
    while len(gone) < 3:
        now = time.time()
        if time.monotonic() > deadline:
            fail(f"the node's endpoints were still matched {now - t0:.1f} s after the signal: gone {gone}")
        for name, count in (
            ("keypoints_writer", len(kp_r.get_matched_publications())),
            ("matches_writer", len(m_r.get_matched_publications())),
            ("image_reader", len(img_w.get_matched_subscriptions())),
        ):
            if count == 0 and name not in gone:
                gone[name] = round(now - t0, 3)
        time.sleep(0.005)
    print(json.dumps({"ok": True, "gone_after_s": gone}), flush=True)


def main():
    if "--mode" in sys.argv:
        ap = argparse.ArgumentParser()
        ap.add_argument("--mode", choices=["large", "shutdown"], required=True)
        ap.add_argument("--domain", type=int, required=True)
        ap.add_argument("--image", help="binary PGM (large)")
        ap.add_argument("--frames", default="4000x3000:mono8,3840x2160:rgb8")
        ap.add_argument("--resend-s", type=float, default=5.0)
        ap.add_argument("--signal-file", help="appears when the node is signalled (shutdown)")
        ap.add_argument("--timeout", type=float, default=60.0)
        args = ap.parse_args()
        return large(args) if args.mode == "large" else shutdown(args)
    ap = argparse.ArgumentParser()
    ap.add_argument("--domain", type=int, required=True)
    ap.add_argument("--node", default="/surfcl_node", help="fully qualified node name")
    ap.add_argument("--image", required=True, help="binary PGM")
    ap.add_argument("--timeout", type=float, default=60.0)
    args = ap.parse_args()
    deadline = time.monotonic() + args.timeout

    w, h, px = half(*read_pgm(args.image))
    dp = DomainParticipant(args.domain)
    reliable = Qos(Policy.Reliability.Reliable(duration(seconds=1)), Policy.History.KeepLast(10))
    img_w = DataWriter(dp, Topic(dp, "rt/image", Image), qos=reliable)
    kp_r = DataReader(dp, Topic(dp, "rt/keypoints", KeypointArray), qos=reliable)
    m_r = DataReader(dp, Topic(dp, "rt/matches", MatchArray), qos=reliable)
    node = args.node.lstrip("/")
    svc_qos = Qos(Policy.Reliability.Reliable(duration(seconds=1)), Policy.History.KeepLast(1))
    req_w = DataWriter(dp, Topic(dp, f"rq/{node}/set_parametersRequest", SetParametersRequest), qos=svc_qos)
    rep_r = DataReader(dp, Topic(dp, f"rr/{node}/set_parametersReply", SetParametersResponse), qos=svc_qos)

    t0 = time.monotonic()
    while True:
        matched = (
            len(img_w.get_matched_subscriptions()) > 0
            and len(kp_r.get_matched_publications()) > 0
            and len(m_r.get_matched_publications()) > 0
            and len(req_w.get_matched_subscriptions()) > 0
            and len(rep_r.get_matched_publications()) > 0
        )
        if matched:
            break
        if time.monotonic() > deadline:
            fail("discovery of surfcl-node timed out")
        time.sleep(0.05)
    discovery_s = time.monotonic() - t0

    def process(sec, encoding):
        if encoding == "mono8":
            data, step = list(px), w
        else:
            data, step = [v for p in px for v in (p, p, p)], 3 * w
        msg = Image(Header(Time(sec, 0), "peer_camera"), h, w, encoding, 0, step, data)
        kp = m = None
        while kp is None or m is None:
            if time.monotonic() > deadline:
                fail(f"no output for frame {sec} ({encoding})")
            if kp is None:
                img_w.write(msg)
            until = time.monotonic() + 1.5
            while time.monotonic() < until and (kp is None or m is None):
                for s in kp_r.take(N=10):
                    if s.header.stamp.sec == sec:
                        kp = s
                for s in m_r.take(N=10):
                    if s.header.stamp.sec == sec:
                        m = s
                time.sleep(0.01)
        return kp, m

    def set_params(params):
        req_w.write(SetParametersRequest(params))
        while time.monotonic() < deadline:
            for s in rep_r.take(N=1):
                return s.results
            time.sleep(0.01)
        fail("no reply from set_parameters")

    kp1, m1 = process(1, "mono8")
    if kp1.header.frame_id != "peer_camera" or not kp1.keypoints:
        fail(f"bad keypoints for mono8: frame {kp1.header.frame_id!r}, {len(kp1.keypoints)} keypoints")
    if len(kp1.descriptors) != 64 * len(kp1.keypoints) or kp1.descriptor_length != 64:
        fail("descriptor array has the wrong length")
    kp2, m2 = process(2, "rgb8")
    same = [(k.x, k.y, k.scale, k.response) for k in kp1.keypoints] == [
        (k.x, k.y, k.scale, k.response) for k in kp2.keypoints
    ]
    if not same:
        fail("rgb8 with R=G=B gave other keypoints than mono8")
    if m2.previous_header.stamp.sec != 1 or len(m2.matches) == 0:
        fail(f"matches of frame 2: previous stamp {m2.previous_header.stamp.sec}, {len(m2.matches)} matches")
    identity = sum(1 for mm in m2.matches if mm.query == mm.train)

    bad = set_params([int_param("octaves", 9)])
    if len(bad) != 1 or bad[0].successful or "octaves" not in bad[0].reason:
        fail(f"octaves=9 was not refused with a reason: {bad}")
    limit = max(1, len(kp1.keypoints) // 4)
    good = set_params([int_param("max_keypoints", limit)])
    if len(good) != 1 or not good[0].successful:
        fail(f"max_keypoints={limit} refused: {good}")
    kp3, m3 = process(3, "mono8")
    if len(kp3.keypoints) != limit or kp3.dropped == 0:
        fail(f"after max_keypoints={limit}: {len(kp3.keypoints)} keypoints, dropped {kp3.dropped}")
    strongest = [(k.x, k.y) for k in kp1.keypoints[:limit]] == [(k.x, k.y) for k in kp3.keypoints]

    print(
        json.dumps(
            {
                "ok": True,
                "discovery_s": round(discovery_s, 3),
                "image": [w, h],
                "keypoints_mono8": len(kp1.keypoints),
                "keypoints_rgb8_identical": same,
                "matches_frame2": len(m2.matches),
                "matches_identity": identity,
                "bad_param_reason": bad[0].reason,
                "max_keypoints_set": limit,
                "keypoints_after_set": len(kp3.keypoints),
                "dropped_after_set": kp3.dropped,
                "strongest_kept": strongest,
            }
        ),
        flush=True,
    )
    if not strongest:
        fail("the limited set is not the strongest prefix of the full set")


if __name__ == "__main__":
    main()
