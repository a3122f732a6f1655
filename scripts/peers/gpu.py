#!/usr/bin/env python3
"""Peers measured on the GPU machine in the same run as `surfcl bench` (see docs/BENCHMARKS.md).

torch cdist + topk(k=2) on random unit 64-d descriptors (GPU-resident and with host transfers),
and cv2.cornerHarris on a 1024x1024 image on the CPU. Prints one JSON object.
"""
import json
import statistics
import sys
import time


def median_ms(fn, repeat=50, warmup=5):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main():
    out = {}
    try:
        import torch

        dev = torch.device("cuda")
        for n in (1024, 4096, 16384):
            a = torch.nn.functional.normalize(torch.randn(n, 64), dim=1)
            b = torch.nn.functional.normalize(torch.randn(n, 64), dim=1)
            ga, gb = a.to(dev), b.to(dev)

            def resident():
                d = torch.cdist(ga, gb)
                v, i = torch.topk(d, 2, dim=1, largest=False)
                torch.cuda.synchronize()

            def with_transfers():
                d = torch.cdist(a.to(dev), b.to(dev))
                v, i = torch.topk(d, 2, dim=1, largest=False)
                v.cpu(), i.cpu()

            rep = 20 if n >= 16384 else 100
            out[f"torch_knn_{n}_resident_ms"] = median_ms(resident, rep)
            out[f"torch_knn_{n}_transfers_ms"] = median_ms(with_transfers, rep)
        out["torch_device"] = torch.cuda.get_device_name(0)
    except Exception as e:  # the peer is optional: report why it is missing
        out["torch_error"] = repr(e)
    try:
        import cv2
        import numpy as np

        img = cv2.imread(sys.argv[1], cv2.IMREAD_GRAYSCALE) if len(sys.argv) > 1 else None
        if img is None:
            img = (np.random.rand(1024, 1024) * 255).astype("uint8")
        img = cv2.resize(img, (1024, 1024))
        f = img.astype("float32")
        out["cv2_cornerHarris_1024_ms"] = median_ms(lambda: cv2.cornerHarris(f, 3, 3, 0.04), 50)
        out["cv2_threads"] = cv2.getNumThreads()
    except Exception as e:
        out["cv2_error"] = repr(e)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
