#!/usr/bin/env python3
"""Peer of the CPU matcher bench (gpu-runner/benches/cpu_match.rs): cv2.BFMatcher(NORM_L2)
knnMatch k=2 on the very descriptors the bench matched (raw little-endian f32, 64 per row, as
the bench writes them with SURFCL_MATCH_DUMP=DIR).

Usage: scripts/peers/bfmatcher.py THREADS DIR. Prints one JSON line per size: the best of 5
runs after a warm-up (milliseconds).
Needs: pip install opencv-python-headless numpy
"""
import glob
import json
import os
import sys
import time

import cv2
import numpy as np


def main():
    threads, folder = int(sys.argv[1]), sys.argv[2]
    cv2.setNumThreads(threads)
    for query_path in sorted(glob.glob(os.path.join(folder, "query_*.f32"))):
        n = query_path.rsplit("_", 1)[1].split(".")[0]
        matches = glob.glob(os.path.join(folder, f"train_*.f32"))
        train_path = [p for p in matches if p.endswith(f"_{n}.f32")] or matches
        query = np.fromfile(query_path, dtype="<f4").reshape(-1, 64)
        train = np.fromfile(train_path[0], dtype="<f4").reshape(-1, 64)
        bf = cv2.BFMatcher(cv2.NORM_L2)
        bf.knnMatch(query, train, k=2)
        times = []
        for _ in range(5):
            t0 = time.perf_counter()
            bf.knnMatch(query, train, k=2)
            times.append((time.perf_counter() - t0) * 1e3)
        print(json.dumps({"peer": "cv2.BFMatcher(NORM_L2).knnMatch(k=2)", "threads": threads,
                          "query": len(query), "train": len(train),
                          "best_ms": round(min(times), 1)}))


if __name__ == "__main__":
    main()
