#!/usr/bin/env python3
"""surfcl-node seen from a ROS 2 node (rclpy on Fast DDS, the default RMW), no special settings.

Checks, in one session: discovery both ways (the node's publishers and its image subscription
in our graph, the node in the node list); the keypoints of a photo equal `surfcl detect`'s
(--cli-json); a 12 MB frame (4000x3000 mono8) comes back as keypoints; the standard parameter
services (list, get, describe, a refused and an accepted set, which applies to the next frame).
Prints one JSON line; exits non-zero with {"ok": false, "error": ...} at the first failure.
"""
import argparse
import json
import sys
import time

import numpy as np
import rclpy
from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
from rcl_interfaces.srv import (DescribeParameters, GetParameters, ListParameters,
                                SetParameters)
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import Image
from surfcl_msgs.msg import KeypointArray

from latency import read_pgm, tiled
from probe import (Failed, call_service, mono8_image, outputs_and_input_matched, run_probe,
                   spin_for, spin_until)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--image", required=True, help="binary PGM")
    ap.add_argument("--cli-json", required=True, help="`surfcl detect --json` of --image")
    ap.add_argument("--node", default="/surfcl_node")
    ap.add_argument("--timeout", type=float, default=90.0)
    args = ap.parse_args()
    return run_probe("surfcl_interop_probe", run, args)


def run(node, args, deadline, result):
    target = args.node
    name = target.rsplit("/", 1)[-1]
    pub = node.create_publisher(Image, "image", 10)
    keypoints = {}
    node.create_subscription(KeypointArray, "keypoints",
                             lambda m: keypoints.__setitem__(m.header.stamp.sec, m),
                             QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE))

    # Discovery, both ways.
    t0 = time.monotonic()
    spin_until(node, deadline, lambda: outputs_and_input_matched(node, pub)
               and name in node.get_node_names(), "discovery of the node")
    result["discovery_s"] = round(time.monotonic() - t0, 3)
    types = dict(node.get_topic_names_and_types())
    result["topic_types"] = {t: types.get(t) for t in ("/keypoints", "/matches", "/diagnostics")}
    if types.get("/keypoints") != ["surfcl_msgs/msg/KeypointArray"]:
        raise Failed(f"keypoints type in the graph: {types.get('/keypoints')}")
    # The node's reader must also have matched our writer before the first frame goes out.
    spin_for(node, 1.0)

    def process(sec, pixels, resend_s=3.0):
        h, w = pixels.shape
        msg = mono8_image(sec, pixels)
        next_send = 0.0
        while sec not in keypoints:
            if time.monotonic() > deadline:
                raise Failed(f"no keypoints for frame {sec} ({w}x{h})")
            if time.monotonic() >= next_send:
                # Best effort on the node's side: a frame may be lost on the way in.
                pub.publish(msg)
                next_send = time.monotonic() + resend_s
            rclpy.spin_once(node, timeout_sec=0.02)
        return keypoints[sec]

    # The photo's keypoints equal the command line's.
    photo = read_pgm(args.image)
    kp = process(1, photo)
    with open(args.cli_json) as f:
        cli = json.load(f)["keypoints"]
    got = [(k.x, k.y, k.scale, k.orientation, k.response, k.laplacian) for k in kp.keypoints]
    want = [tuple(float(np.float32(c[f])) for f in ("x", "y", "scale", "orientation", "response"))
            + (c["laplacian"],) for c in cli]
    result["keypoints_photo"] = len(got)
    result["keypoints_cli"] = len(want)
    if got != want:
        diff = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
        raise Failed(f"keypoints differ from `surfcl detect` at index {diff} "
                     f"({len(got)} against {len(want)})")
    if len(kp.descriptors) != 64 * len(got) or kp.descriptor_length != 64:
        raise Failed("descriptor array has the wrong length")

    # A 12 MB frame.
    big = tiled(photo, 4000, 3000)
    t0 = time.monotonic()
    kp_big = process(2, big, resend_s=10.0)
    result["frame_12mb_keypoints"] = len(kp_big.keypoints)
    result["frame_12mb_s"] = round(time.monotonic() - t0, 2)
    if not kp_big.keypoints:
        raise Failed("no keypoints in the 12 MB frame")

    # Parameters through the standard services.
    def call(srv_type, service, request):
        return call_service(node, deadline, srv_type, f"{target}/{service}", request)

    names = call(ListParameters, "list_parameters", ListParameters.Request()).result.names
    result["parameters"] = len(names)
    for expected in ("max_keypoints", "threshold", "detector", "backend"):
        if expected not in names:
            raise Failed(f"list_parameters lacks {expected}: {list(names)}")
    values = call(GetParameters, "get_parameters",
                  GetParameters.Request(names=["max_keypoints", "detector"])).values
    if values[0].type != ParameterType.PARAMETER_INTEGER or values[1].string_value != "surf":
        raise Failed(f"get_parameters: {values}")
    described = call(DescribeParameters, "describe_parameters",
                     DescribeParameters.Request(names=["max_keypoints", "threshold"])).descriptors
    if [d.name for d in described] != ["max_keypoints", "threshold"] or \
            described[0].type != ParameterType.PARAMETER_INTEGER:
        raise Failed(f"describe_parameters: {described}")
    result["describe_max_keypoints"] = {
        "description": described[0].description,
        "integer_range": [(r.from_value, r.to_value) for r in described[0].integer_range]}

    def set_int(pname, value):
        p = Parameter(name=pname, value=ParameterValue(type=ParameterType.PARAMETER_INTEGER,
                                                       integer_value=value))
        return call(SetParameters, "set_parameters", SetParameters.Request(parameters=[p])).results[0]

    refused = set_int("octaves", 9)
    if refused.successful or "octaves" not in refused.reason:
        raise Failed(f"octaves=9 was not refused with a reason: {refused}")
    limit = max(1, len(got) // 4)
    accepted = set_int("max_keypoints", limit)
    if not accepted.successful:
        raise Failed(f"max_keypoints={limit} refused: {accepted.reason}")
    kp3 = process(3, photo)
    result["keypoints_after_set"] = len(kp3.keypoints)
    if [(k.x, k.y) for k in kp3.keypoints] != [g[:2] for g in got[:limit]]:
        raise Failed(f"after max_keypoints={limit}: {len(kp3.keypoints)} keypoints, "
                     "not the strongest of the full set")


if __name__ == "__main__":
    sys.exit(main())
