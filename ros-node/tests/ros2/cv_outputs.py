#!/usr/bin/env python3
"""The node's outputs in OpenCV, received by a ROS 2 node (rclpy on Fast DDS).

Publishes two frames (--image1, then --image2), receives the node's `keypoints` of both and the
`matches` of the second against the first, converts them with the interface package's
`surfcl_msgs.cv` (as installed by colcon, not from the source tree) and checks, against the
JSON of the command line on the same images (`surfcl detect` of each, `surfcl match IMAGE2
IMAGE1`: query = the current frame, train = the previous one, as the node matches):
  - every cv2.KeyPoint of to_cv_keypoints equals the CLI's keypoint under the documented
    mapping (pt = (x, y), size = 7.5 * scale, angle = orientation in degrees in [0, 360),
    response, octave 0, class_id = Laplacian sign);
  - descriptors() is the (N, 64) float32 array of the CLI's descriptors, value for value;
  - cv2.drawKeypoints draws the converted keypoints (rich flags: circles of `size`);
  - every cv2.DMatch of to_cv_matches equals the CLI's match and the L2 distance of the
    converted descriptors, and cv2.BFMatcher (L2, equal Laplacian signs, the CLI's ratio test)
    on the converted descriptors finds the node's matches.
Prints one `ok: ...` line per check and a final JSON line; exits 1 with {"ok": false, "error": ...}
at the first failure.
"""
import argparse
import json
import math
import sys
import time

import cv2
import numpy as np
import rclpy
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import Image
from surfcl_msgs import cv as scv
from surfcl_msgs.msg import KeypointArray, MatchArray

from latency import read_pgm
from probe import (Failed, mono8_image, outputs_and_input_matched, run_probe, spin_for,
                   spin_until)

#: cv2.KeyPoint.size per unit of surfcl's scale (OpenCV SURF: scale = size * 1.2 / 9).
SIZE_PER_SCALE = 7.5


def check(condition, message):
    if not condition:
        raise Failed(message)


def f32(value):
    return float(np.float32(value))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--image1", required=True, help="binary PGM, the first (previous) frame")
    ap.add_argument("--image2", required=True, help="binary PGM, the second (current) frame")
    ap.add_argument("--detect1", required=True, help="`surfcl detect --json` of --image1")
    ap.add_argument("--detect2", required=True, help="`surfcl detect --json` of --image2")
    ap.add_argument("--match", required=True, help="`surfcl match --json IMAGE2 IMAGE1`")
    ap.add_argument("--timeout", type=float, default=90.0)
    args = ap.parse_args()
    return run_probe("surfcl_cv_probe", run, args)


def receive(node, args, deadline):
    """The node's KeypointArray of both frames and the MatchArray of frame 2 against frame 1."""
    pub = node.create_publisher(Image, "image", 10)
    reliable = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
    keypoints, matches = {}, {}
    node.create_subscription(KeypointArray, "keypoints",
                             lambda m: keypoints.__setitem__(m.header.stamp.sec, m), reliable)
    node.create_subscription(
        MatchArray, "matches",
        lambda m: matches.__setitem__((m.header.stamp.sec, m.previous_header.stamp.sec), m),
        reliable)
    spin_until(node, deadline, lambda: outputs_and_input_matched(node, pub),
               "discovery of the node")
    # The node's reader must also have matched our writer before the first frame goes out.
    spin_for(node, 1.0)

    def process(sec, path, done):
        pixels = read_pgm(path)
        msg = mono8_image(sec, pixels)
        next_send = 0.0
        while not done():
            if time.monotonic() > deadline:
                raise Failed(f"no outputs for frame {sec} ({path})")
            if time.monotonic() >= next_send:
                # Best effort on the node's side: a frame may be lost on the way in.
                pub.publish(msg)
                next_send = time.monotonic() + 3.0
            rclpy.spin_once(node, timeout_sec=0.02)

    process(1, args.image1, lambda: 1 in keypoints)
    process(2, args.image2, lambda: 2 in keypoints and (2, 1) in matches)
    return keypoints[1], keypoints[2], matches[(2, 1)]


def load(path):
    with open(path) as f:
        return json.load(f)


def check_keypoints(msg, cli, what):
    """cv2.KeyPoint of the node's message against the CLI's JSON keypoints, field by field."""
    upright = bool(cli.get("params", {}).get("surf", {}).get("upright", False))
    check(not upright, f"{what}: the CLI ran upright SURF; the node's defaults are oriented")
    kps = scv.to_cv_keypoints(msg)
    want = cli["keypoints"]
    check(len(kps) == len(want) > 0,
          f"{what}: {len(kps)} cv2.KeyPoint from the node, the CLI found {len(want)}")
    for i, (k, c) in enumerate(zip(kps, want)):
        check(isinstance(k, cv2.KeyPoint), f"{what} keypoint {i}: {type(k)}")
        at = f"{what} keypoint {i}"
        # cv2.KeyPoint holds float32: positions and responses are the CLI's f32 values exactly.
        check((k.pt[0], k.pt[1]) == (f32(c["x"]), f32(c["y"])),
              f"{at}: pt {k.pt}, CLI ({c['x']}, {c['y']})")
        check(k.response == f32(c["response"]), f"{at}: response {k.response}, CLI {c['response']}")
        size = SIZE_PER_SCALE * c["scale"]
        check(abs(k.size - size) <= 1e-6 * size, f"{at}: size {k.size}, 7.5 * CLI scale {size}")
        angle = math.degrees(c["orientation"])
        turn = abs(k.angle - angle) % 360.0
        check(0.0 <= k.angle < 360.0 and min(turn, 360.0 - turn) <= 1e-4,
              f"{at}: angle {k.angle}, CLI orientation {c['orientation']} rad = {angle} deg")
        check(k.octave == 0, f"{at}: octave {k.octave}")
        check(k.class_id == c["laplacian"], f"{at}: class_id {k.class_id}, CLI laplacian {c['laplacian']}")
    print(f"ok: {what}: {len(kps)} cv2.KeyPoint equal the CLI's keypoints under the mapping",
          flush=True)
    return kps


def check_descriptors(msg, cli, what):
    desc = scv.descriptors(msg)
    want = np.asarray(cli["descriptors"], dtype=np.float32).reshape(-1, 64)
    check(desc.dtype == np.float32 and desc.shape == want.shape,
          f"{what}: descriptors {desc.dtype} {desc.shape}, CLI {want.shape}")
    differ = int(np.count_nonzero(desc != want))
    check(differ == 0, f"{what}: {differ} descriptor values differ from the CLI's")
    print(f"ok: {what}: descriptors ({len(desc)}, 64) float32 equal the CLI's", flush=True)
    return desc


def check_drawing(path, kps):
    image = cv2.imread(path, cv2.IMREAD_GRAYSCALE)
    check(image is not None, f"cv2 cannot read {path}")
    drawn = cv2.drawKeypoints(image, kps, None, color=(0, 0, 255),
                              flags=cv2.DRAW_MATCHES_FLAGS_DRAW_RICH_KEYPOINTS)
    check(drawn.shape == image.shape + (3,), f"drawn picture {drawn.shape}")
    # The drawing is anti-aliased: a drawn pixel is one that is no longer the gray picture's.
    changed = np.any(drawn != cv2.cvtColor(image, cv2.COLOR_GRAY2BGR), axis=2)
    check(changed.sum() > len(kps), f"drawKeypoints drew {changed.sum()} pixels for {len(kps)} keypoints")
    # The strongest keypoint's circle, of radius size / 2: drawn pixels on it.
    k = kps[0]
    r = k.size / 2
    hits = 0
    for t in np.linspace(0, 2 * math.pi, 64, endpoint=False):
        x, y = int(round(k.pt[0] + r * math.cos(t))), int(round(k.pt[1] + r * math.sin(t)))
        if 0 <= y < changed.shape[0] and 0 <= x < changed.shape[1] \
                and changed[max(0, y - 1):y + 2, max(0, x - 1):x + 2].any():
            hits += 1
    check(hits >= 48, f"only {hits} of 64 points of the strongest keypoint's circle are drawn")
    print(f"ok: cv2.drawKeypoints drew the node's keypoints ({changed.sum()} pixels; the "
          f"strongest's circle of radius {r:.1f})", flush=True)


def check_matches(msg, cli, kps_query, kps_train, desc_query, desc_train):
    dm = scv.to_cv_matches(msg)
    want = cli["matches"]
    check(len(dm) == len(want) > 10, f"{len(dm)} cv2.DMatch from the node, the CLI found {len(want)}")
    for i, (d, c) in enumerate(zip(dm, want)):
        check(isinstance(d, cv2.DMatch), f"match {i}: {type(d)}")
        check((d.queryIdx, d.trainIdx, d.imgIdx) == (c["query"], c["train"], 0),
              f"match {i}: DMatch ({d.queryIdx}, {d.trainIdx}), CLI ({c['query']}, {c['train']})")
        check(abs(d.distance - c["distance"]) <= 1e-6,
              f"match {i}: distance {d.distance}, CLI {c['distance']}")
        l2 = float(np.linalg.norm(desc_query[d.queryIdx] - desc_train[d.trainIdx]))
        check(abs(l2 - d.distance) <= 1e-4,
              f"match {i}: distance {d.distance}, L2 of the converted descriptors {l2}")
    print(f"ok: {len(dm)} cv2.DMatch equal the CLI's matches and the descriptors' L2 distances",
          flush=True)

    # cv2.BFMatcher on the converted descriptors, Laplacian signs equal (the matcher's sign
    # test), then the ratio test on the two nearest.
    matching = cli.get("params", {}).get("matching", {})
    ratio = float(matching.get("ratio", 0.8))
    sign_test = bool(matching.get("sign_test", True))
    lap_q = np.array([k.class_id for k in kps_query])
    lap_t = np.array([k.class_id for k in kps_train])
    mask = (lap_q[:, None] == lap_t[None, :]) if sign_test \
        else np.ones((len(kps_query), len(kps_train)), bool)
    knn = cv2.BFMatcher(cv2.NORM_L2).knnMatch(desc_query, desc_train, k=2,
                                               mask=mask.astype(np.uint8))
    ours = {}
    for pair in knn:
        if len(pair) == 2 and pair[0].distance < ratio * pair[1].distance:
            ours[pair[0].queryIdx] = (pair[0].trainIdx, pair[0].distance)
    node = {d.queryIdx: (d.trainIdx, d.distance) for d in dm}
    same = sum(1 for q, (t, _) in node.items() if q in ours and ours[q][0] == t)
    differ = len(set(node) ^ set(ours)) + (len(set(node) & set(ours)) - same)
    # Only ratios within float rounding of the limit may fall the other way.
    check(differ <= max(2, len(node) // 100),
          f"cv2.BFMatcher: {len(ours)} matches, the node {len(node)}, {same} the same")
    far = [q for q, (t, d) in node.items()
           if q in ours and ours[q][0] == t and abs(ours[q][1] - d) > 1e-4]
    check(not far, f"cv2.BFMatcher distances differ from the node's for queries {far[:5]}")
    print(f"ok: cv2.BFMatcher (L2, equal signs, ratio {ratio:.2f}) on the converted descriptors: "
          f"{len(ours)} matches, {same} of the node's {len(node)} identical", flush=True)
    return len(ours), same


def run(node, args, deadline, result):
    kp1, kp2, matches = receive(node, args, deadline)
    cli1, cli2, cli_match = load(args.detect1), load(args.detect2), load(args.match)
    result["module"] = scv.__file__
    kps1 = check_keypoints(kp1, cli1, "frame 1")
    kps2 = check_keypoints(kp2, cli2, "frame 2")
    desc1 = check_descriptors(kp1, cli1, "frame 1")
    desc2 = check_descriptors(kp2, cli2, "frame 2")
    check_drawing(args.image1, kps1)
    # The node matches the current frame (query) against the previous one (train).
    bf_matches, bf_same = check_matches(matches, cli_match, kps2, kps1, desc2, desc1)
    result.update(keypoints=[len(kps1), len(kps2)], matches=len(matches.matches),
                  bf_matches=bf_matches, bf_same=bf_same)


if __name__ == "__main__":
    sys.exit(main())
