#!/usr/bin/env python3
"""OpenCV CPU peers of the surfcl-core benches (core/benches/matcher.rs and harris.rs).

- BFMatcher().knnMatch(k=2) (L2, float32) of N random unit 64-d descriptors against themselves,
  N = 3000 and 15000 (and 3095 / 15595, the sizes of earlier measurements).
- cv2.cornerHarris(img, blockSize=3, ksize=3, k=0.04) on the boat image img1.pgm, cropped to
  640x480 (top-left) and tiled to 1920x1080, exactly as the Rust bench builds them.

Reports the best of several runs (ms) with 1 thread and with the default thread count.
Usage: python3 scripts/peers/cpu.py [--quick] [--json FILE]
Needs: pip install opencv-python-headless numpy
"""
import argparse
import json
import os
import time

import cv2
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def best_ms(fn, repeats):
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times) * 1e3


def descriptors(n, seed=42):
    rng = np.random.default_rng(seed)
    d = rng.uniform(-1.0, 1.0, (n, 64)).astype(np.float32)
    return d / np.linalg.norm(d, axis=1, keepdims=True)


def sized(img, w, h):
    sh, sw = img.shape
    ys = np.arange(h) % sh
    xs = np.arange(w) % sw
    return np.ascontiguousarray(img[ys][:, xs])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="skip N=15000/15595")
    ap.add_argument("--json")
    args = ap.parse_args()
    results = {"opencv": cv2.__version__, "default_threads": cv2.getNumThreads()}
    thread_counts = sorted({1, cv2.getNumThreads()})
    sizes = [3000, 3095] if args.quick else [3000, 3095, 15000, 15595]
    for n in sizes:
        d = descriptors(n)
        for threads in thread_counts:
            cv2.setNumThreads(threads)
            bf = cv2.BFMatcher(cv2.NORM_L2)
            ms = best_ms(lambda: bf.knnMatch(d, d, k=2), 3 if n > 5000 else 7)
            results[f"knn2_n{n}_t{threads}_ms"] = ms
            print(f"BFMatcher knnMatch k=2  N={n:5d} threads={threads}: {ms:9.2f} ms", flush=True)
    boat = cv2.imread(os.path.join(ROOT, "data", "oxford-boat", "img1.pgm"), cv2.IMREAD_GRAYSCALE)
    for w, h in [(640, 480), (1920, 1080)]:
        img = sized(boat, w, h)
        for threads in thread_counts:
            cv2.setNumThreads(threads)
            ms = best_ms(lambda: cv2.cornerHarris(img, 3, 3, 0.04), 30)
            results[f"harris_{w}x{h}_t{threads}_ms"] = ms
            print(f"cornerHarris 3/3/0.04    {w}x{h} threads={threads}: {ms:9.2f} ms", flush=True)
    cv2.setNumThreads(-1)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
