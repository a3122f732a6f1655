#!/usr/bin/env python3
"""Loads a `surfcl ... --npz` archive with numpy and checks that it holds the values of the JSON
report of the same run (docs/JSON.md, "NumPy archives"). Used by cli/tests/formats.rs.

Usage: compare.py detect|match|stream FILE.npz FILE.json
Prints what it checked; exits 1 with the first difference.
"""
import json
import sys

import numpy as np


def fail(message):
    print(f"npz != json: {message}", file=sys.stderr)
    sys.exit(1)


def keypoints(rows):
    """JSON keypoint objects as the archive's (N, 6) float32 rows."""
    fields = ("x", "y", "scale", "orientation", "response", "laplacian")
    return np.array([[k[f] for f in fields] for k in rows], dtype=np.float32).reshape(-1, 6)


def matches(rows):
    """JSON match objects as the archive's (M, 3) float32 rows."""
    fields = ("query", "train", "distance")
    return np.array([[m[f] for f in fields] for m in rows], dtype=np.float32).reshape(-1, 3)


def same(name, got, want):
    if got.dtype != want.dtype:
        fail(f"{name}: dtype {got.dtype}, expected {want.dtype}")
    if got.shape != want.shape:
        fail(f"{name}: shape {got.shape}, expected {want.shape}")
    if not np.array_equal(got, want):
        bad = np.argwhere(got != want)[0]
        fail(f"{name}: at {tuple(bad)} {got[tuple(bad)]!r}, expected {want[tuple(bad)]!r}")


def descriptors(name, got, count, kind):
    want_dtype = np.int8 if kind == "q7" else np.float32
    if got.dtype != want_dtype or got.shape != (count, 64):
        fail(f"{name}: {got.dtype} {got.shape}, expected {np.dtype(want_dtype)} ({count}, 64)")


def main():
    command, npz_path, json_path = sys.argv[1:4]
    with open(json_path) as f:
        report = json.load(f)
    z = np.load(npz_path)
    if int(z["format_version"]) != report["format_version"]:
        fail(f"format_version {int(z['format_version'])} != {report['format_version']}")
    if json.loads(str(z["params"])) != report["params"]:
        fail(f"params {str(z['params'])} != {report['params']}")
    checked = 0
    if command == "detect":
        same("keypoints", z["keypoints"], keypoints(report["keypoints"]))
        same("descriptors", z["descriptors"],
             np.array(report["descriptors"], dtype=np.float32).reshape(-1, 64))
        checked = len(report["keypoints"])
    elif command == "match":
        same("keypoints1", z["keypoints1"], keypoints(report["keypoints1"]))
        same("keypoints2", z["keypoints2"], keypoints(report["keypoints2"]))
        same("matches", z["matches"], matches(report["matches"]))
        descriptors("descriptors1", z["descriptors1"], len(report["keypoints1"]), report["descriptor"])
        descriptors("descriptors2", z["descriptors2"], len(report["keypoints2"]), report["descriptor"])
        checked = len(report["matches"])
    elif command == "stream":
        processed = [f for f in report["frames"] if "error" not in f]
        same("frame_index", z["frame_index"], np.array([f["index"] for f in processed], dtype=np.int64))
        same("previous", z["previous"],
             np.array([-1 if f["previous"] is None else f["previous"] for f in processed], dtype=np.int64))
        same("latency_ms", z["latency_ms"], np.array([f["latency_ms"] for f in processed], dtype=np.float64))
        for f in processed:
            k = f["index"]
            same(f"keypoints_{k}", z[f"keypoints_{k}"], keypoints(f["keypoints"]))
            same(f"matches_{k}", z[f"matches_{k}"], matches(f["matches"]))
            descriptors(f"descriptors_{k}", z[f"descriptors_{k}"], len(f["keypoints"]), "f32")
            checked += len(f["keypoints"])
        skipped = [f["index"] for f in report["frames"] if "error" in f]
        for k in skipped:
            if f"keypoints_{k}" in z.files:
                fail(f"skipped frame {k} has keypoints in the archive")
    else:
        fail(f"unknown command {command}")
    print(f"{command}: {len(z.files)} arrays equal the JSON ({checked} rows checked)")


if __name__ == "__main__":
    main()
