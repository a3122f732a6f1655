#!/usr/bin/env python3
"""Peer for the core detect+describe benchmark: cv2 SIFT detectAndCompute on the same image.

Usage: scripts/peers/sift.py IMAGE [THREADS]. Prints median milliseconds of 7 runs after a
warm-up and the keypoint count, as JSON. (PyPI OpenCV has no SURF: that is why surfcl exists.)
"""
import json
import statistics
import sys

import cv2

from timing import timed_runs


def main():
    path = sys.argv[1]
    threads = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    cv2.setNumThreads(threads)
    img = cv2.imread(path, cv2.IMREAD_GRAYSCALE)
    if img is None:
        sys.exit(f"cannot read {path}")
    sift = cv2.SIFT_create()
    (kps, _), times = timed_runs(lambda: sift.detectAndCompute(img, None), 7)
    print(json.dumps({"peer": "cv2.SIFT detectAndCompute", "threads": threads,
                      "image": path, "ms": statistics.median(times), "keypoints": len(kps)}))


if __name__ == "__main__":
    main()
