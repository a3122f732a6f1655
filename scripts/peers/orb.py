#!/usr/bin/env python3
"""Peer of the CPU backend bench (gpu-runner/benches/cpu_backend.rs): cv2 ORB with 5000 features,
detectAndCompute, on the same images, warm.

Usage: scripts/peers/orb.py THREADS IMAGE... Prints one JSON line per image: the median and the
best of 15 runs after a warm-up (milliseconds), and the keypoint count.
Needs: pip install opencv-python-headless
"""
import json
import statistics
import sys

import cv2

from timing import timed_runs


def main():
    threads = int(sys.argv[1])
    cv2.setNumThreads(threads)
    orb = cv2.ORB_create(nfeatures=5000)
    for path in sys.argv[2:]:
        img = cv2.imread(path, cv2.IMREAD_GRAYSCALE)
        if img is None:
            sys.exit(f"cannot read {path}")
        (kps, _), times = timed_runs(lambda: orb.detectAndCompute(img, None), 15)
        print(json.dumps({"peer": "cv2.ORB_create(5000).detectAndCompute", "threads": threads,
                          "image": path, "median_ms": round(statistics.median(times), 2),
                          "best_ms": round(min(times), 2), "keypoints": len(kps)}))


if __name__ == "__main__":
    main()
