#!/usr/bin/env python3
"""Checks surfcl_msgs.cv (ros-node/msg/python) with numpy and cv2 from PyPI.

Builds surfcl_msgs/KeypointArray- and MatchArray-like objects (the fields of ros-node/msg/msg/*.msg)
from the JSON of `surfcl detect` (two images) and `surfcl match` (the same pair), converts them
with the module, and checks:
  - every cv2.KeyPoint equals the JSON keypoint under the documented mapping
    (pt, size = 9/1.2 * scale, angle in degrees or -1 upright, response, octave 0,
    class_id = Laplacian sign);
  - descriptors() is the (N, 64) float32 array of the JSON, and the int8 array of Q7 messages;
  - cv2.drawKeypoints draws the converted keypoints (rich flags: circles of `size`);
  - cv2.BFMatcher (L2) on the converted descriptors, restricted to equal Laplacian signs (the
    CLI's sign test) with the CLI's ratio test, finds the CLI's matches, and every cv2.DMatch of
    to_cv_matches equals the JSON match and the L2 distance of its descriptors.
Prints one line per check; exits 1 with a message on the first failure.

Usage: check_cv.py --detect1 D1.json --detect2 D2.json --match M.json --image IMG.pgm
"""
import argparse
import json
import math
import os
import sys
from types import SimpleNamespace

import cv2
import numpy as np

sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "msg", "python")
)
from surfcl_msgs import cv as scv  # noqa: E402

FIELDS = ("x", "y", "scale", "orientation", "response", "laplacian")


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def check(condition, message):
    if not condition:
        fail(message)


def keypoint(entry):
    """A surfcl_msgs/Keypoint-like object from a JSON keypoint (object or compact array)."""
    if isinstance(entry, dict):
        return SimpleNamespace(**{f: entry[f] for f in FIELDS})
    return SimpleNamespace(**dict(zip(FIELDS, entry)))


def keypoint_array(report, keypoints_key="keypoints"):
    kps = [keypoint(k) for k in report[keypoints_key]]
    desc = report["descriptors"]
    flat = [v for row in desc for v in row] if desc and isinstance(desc[0], list) else list(desc)
    return SimpleNamespace(
        keypoints=kps,
        descriptors=np.asarray(flat, dtype=np.float32),
        descriptors_q7=np.zeros(0, dtype=np.int8),
        descriptor_length=64,
        dropped=report.get("dropped", 0),
    )


def match_array(report):
    matches = []
    for m in report["matches"]:
        if isinstance(m, dict):
            q, t, d = m["query"], m["train"], m["distance"]
        else:
            q, t, d = m
        matches.append(SimpleNamespace(query=q, train=t, distance=d))
    return SimpleNamespace(matches=matches)


def upright_of(report):
    params = report.get("params", {})
    return report.get("detector", params.get("detector")) == "harris" or bool(
        params.get("surf", {}).get("upright", False)
    )


def close(a, b, tol=1e-4):
    return abs(float(a) - float(b)) <= tol * max(1.0, abs(float(b)))


def check_keypoints(msg, kps, upright, what):
    check(len(kps) == len(msg.keypoints) > 0, "%s: %d keypoints converted of %d" % (what, len(kps), len(msg.keypoints)))
    for i, (k, m) in enumerate(zip(kps, msg.keypoints)):
        angle = -1.0 if upright else math.degrees(m.orientation) % 360.0
        want = [
            ("pt.x", k.pt[0], m.x),
            ("pt.y", k.pt[1], m.y),
            ("size", k.size, m.scale * 9.0 / 1.2),
            ("angle", k.angle, angle),
            ("response", k.response, m.response),
        ]
        for name, got, expected in want:
            check(close(got, expected), "%s keypoint %d: %s %r, JSON gives %r" % (what, i, name, got, expected))
        check(0.0 <= k.angle < 360.0 or (upright and k.angle == -1.0), "%s keypoint %d: angle %r" % (what, i, k.angle))
        check(k.octave == 0, "%s keypoint %d: octave %r" % (what, i, k.octave))
        check(k.class_id == m.laplacian, "%s keypoint %d: class_id %r, laplacian %r" % (what, i, k.class_id, m.laplacian))
    print("ok: %s: %d cv2.KeyPoint equal the JSON under the mapping" % (what, len(kps)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--detect1", required=True)
    ap.add_argument("--detect2", required=True)
    ap.add_argument("--match", required=True)
    ap.add_argument("--image", required=True)
    args = ap.parse_args()
    reports = []
    for path in (args.detect1, args.detect2, args.match):
        with open(path) as f:
            reports.append(json.load(f))
    d1, d2, mr = reports
    msg1, msg2 = keypoint_array(d1), keypoint_array(d2)
    upright = upright_of(d1)

    kps1 = scv.to_cv_keypoints(msg1, upright=upright)
    kps2 = scv.to_cv_keypoints(msg2, upright=upright)
    check(all(isinstance(k, cv2.KeyPoint) for k in kps1), "not cv2.KeyPoint")
    check_keypoints(msg1, kps1, upright, "image 1")
    check_keypoints(msg2, kps2, upright, "image 2")
    # The same keypoints in the match report (the CLI detects both images again), which the
    # match indices refer to.
    for key, msg in (("keypoints1", msg1), ("keypoints2", msg2)):
        check(key in mr, "the match report has no %r" % key)
        m = [keypoint(k) for k in mr[key]]
        check(
            [(k.x, k.y, k.scale) for k in m] == [(k.x, k.y, k.scale) for k in msg.keypoints],
            "match report's %s differ from detect's" % key,
        )

    desc1, desc2 = scv.descriptors(msg1), scv.descriptors(msg2)
    check(desc1.dtype == np.float32 and desc1.shape == (len(kps1), 64), "descriptors %s %s" % (desc1.dtype, desc1.shape))
    want1 = np.asarray(d1["descriptors"], dtype=np.float32).reshape(-1, 64)
    check(np.array_equal(desc1, want1), "descriptors differ from the JSON")
    norms = np.linalg.norm(desc1, axis=1)
    check(np.allclose(norms, 1.0, atol=1e-3), "descriptors are not unit length: %s" % norms[:5])
    q7 = SimpleNamespace(
        keypoints=msg1.keypoints,
        descriptors=[],
        descriptors_q7=np.clip(np.round(want1 * 127), -127, 127).astype(np.int8).ravel().tolist(),
        descriptor_length=64,
    )
    dq = scv.descriptors(q7)
    check(dq.dtype == np.int8 and dq.shape == want1.shape, "q7 descriptors %s %s" % (dq.dtype, dq.shape))
    check(np.abs(dq.astype(np.float32) / 127 - want1).max() <= 0.5 / 127 + 1e-6, "q7 descriptors off")
    try:
        scv.descriptors(SimpleNamespace(keypoints=msg1.keypoints, descriptors=[0.0] * 63, descriptors_q7=[], descriptor_length=64))
        fail("a descriptor array of the wrong size was accepted")
    except ValueError:
        pass
    print("ok: descriptors: (%d, 64) float32 equal to the JSON, int8 for Q7, wrong sizes refused" % len(desc1))

    image = cv2.imread(args.image, cv2.IMREAD_GRAYSCALE)
    check(image is not None, "cannot read %s" % args.image)
    drawn = cv2.drawKeypoints(image, kps1, None, color=(0, 0, 255), flags=cv2.DRAW_MATCHES_FLAGS_DRAW_RICH_KEYPOINTS)
    check(drawn.shape == image.shape + (3,), "drawn picture %s" % (drawn.shape,))
    # The drawing is anti-aliased: a drawn pixel is one that is no longer the gray picture's.
    red = np.any(drawn != cv2.cvtColor(image, cv2.COLOR_GRAY2BGR), axis=2)
    check(red.sum() > len(kps1), "drawKeypoints drew %d pixels for %d keypoints" % (red.sum(), len(kps1)))
    # A circle of radius size / 2 around the strongest keypoint: red pixels on it.
    k = kps1[0]
    r = k.size / 2
    hits = 0
    for t in np.linspace(0, 2 * math.pi, 64, endpoint=False):
        x, y = int(round(k.pt[0] + r * math.cos(t))), int(round(k.pt[1] + r * math.sin(t)))
        if 0 <= y < red.shape[0] and 0 <= x < red.shape[1] and red[max(0, y - 1):y + 2, max(0, x - 1):x + 2].any():
            hits += 1
    check(hits >= 48, "only %d of 64 points of the strongest keypoint's circle are drawn" % hits)
    print("ok: cv2.drawKeypoints drew the keypoints (%d pixels; the strongest's circle of radius %.1f)" % (red.sum(), r))

    mmsg = match_array(mr)
    dm = scv.to_cv_matches(mmsg)
    check(len(dm) == len(mmsg.matches) > 50, "%d DMatch for %d matches" % (len(dm), len(mmsg.matches)))
    for d, m in zip(dm, mmsg.matches):
        check(isinstance(d, cv2.DMatch), "not cv2.DMatch")
        check((d.queryIdx, d.trainIdx, d.imgIdx) == (m.query, m.train, 0), "DMatch %r vs %r" % ((d.queryIdx, d.trainIdx), (m.query, m.train)))
        check(close(d.distance, m.distance, 1e-5), "DMatch distance %r vs %r" % (d.distance, m.distance))
        l2 = float(np.linalg.norm(desc1[m.query] - desc2[m.train]))
        check(abs(l2 - m.distance) <= 1e-4, "match %d-%d: distance %r, L2 of the descriptors %r" % (m.query, m.train, m.distance, l2))
    print("ok: %d cv2.DMatch equal the JSON and the descriptors' L2 distances" % len(dm))

    # cv2.BFMatcher on the converted descriptors, Laplacian signs equal (the CLI's sign test),
    # then the CLI's ratio test on the two nearest.
    params = mr.get("params", {}).get("matching", {})
    ratio = float(params.get("ratio", 0.8))
    sign_test = bool(params.get("sign_test", True))
    lap1 = np.array([k.class_id for k in kps1])
    lap2 = np.array([k.class_id for k in kps2])
    mask = (lap1[:, None] == lap2[None, :]) if sign_test else np.ones((len(kps1), len(kps2)), bool)
    bf = cv2.BFMatcher(cv2.NORM_L2)
    knn = bf.knnMatch(desc1, desc2, k=2, mask=mask.astype(np.uint8))
    ours = {}
    for pair in knn:
        if len(pair) == 2 and pair[0].distance < ratio * pair[1].distance:
            ours[pair[0].queryIdx] = (pair[0].trainIdx, pair[0].distance)
    cli = {m.query: (m.train, m.distance) for m in mmsg.matches}
    same = sum(1 for q, (t, _) in cli.items() if q in ours and ours[q][0] == t)
    differ = len(set(cli) ^ set(ours)) + (len(set(cli) & set(ours)) - same)
    # Only ratios within float rounding of the limit may fall the other way.
    check(differ <= max(2, len(cli) // 100), "BFMatcher: %d matches, the CLI %d, %d the same" % (len(ours), len(cli), same))
    print("ok: cv2.BFMatcher (L2, equal signs, ratio %.2f) on the converted descriptors: %d matches, %d of the CLI's %d identical" % (ratio, len(ours), same, len(cli)))
    print("PASS")


if __name__ == "__main__":
    main()
