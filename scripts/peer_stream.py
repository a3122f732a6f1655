#!/usr/bin/env python3
"""OpenCV CPU peers of `surfcl bench --stream` (cli/src/bench.rs, bench_stream).

Frames are built as bench.rs builds them: the boat image resized to fill (w+16)x(h+16) and
centre-cropped, then 16 crops w x h at offsets (dx, dy) = (k, 7k mod 16), k = 0..15, played in a
loop, so consecutive frames differ by a real shift. 5 warm-up frames, then --frames timed ones
(bench uses max(--frames, 100)). Per frame: detect + describe + match to the previous frame.
frames/s = timed frames / their total wall time; latency = one frame's wall time (detect to
matches; the frame is already in memory), p50/p99 by nearest rank as in bench.rs.

Peers (all capped at --max-keypoints, default 10000 = surfcl's --max-keypoints default):
- harris: float image -> GaussianBlur 3x3 ([1 2 1]/4) -> cornerHarris(blockSize=3, ksize=3,
  k=0.04), replicated borders (surfcl's Harris: Gaussian 3x3, Sobel 3x3, 3x3 box window sum,
  k 0.04); threshold R > 0 and R >= 0.01 max R; 5x5 NMS (R == dilate(R, 5x5)); strongest N;
  described by ORB.compute with angle 0 (upright, as surfcl describes Harris points upright;
  ORB drops points within 31 px of the border). OpenCV's pip build has no SURF.
- orb: ORB_create(nfeatures=N).detectAndCompute.
Both match with BFMatcher(NORM_HAMMING).knnMatch(k=2) + ratio 0.8 (surfcl's default ratio).

Usage: python3 scripts/peer_stream.py [IMAGE] [--frames N] [--sizes 640x480,1920x1080]
           [--threads T] [--peers harris,orb] [--json FILE|-]
Needs: pip install opencv-python-headless numpy
"""
import argparse
import json
import math
import os
import statistics
import sys
import time

try:
    import cv2
    import numpy as np
except ImportError as e:
    sys.exit(f"peer_stream.py needs OpenCV and numpy ({e}): pip install opencv-python-headless numpy")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHIFT = 16
WARM = 5
RATIO = 0.8


def fill(src, w, h):
    """bench.rs frame(): resize to fill w x h (keeping the aspect), centre-crop."""
    sh, sw = src.shape
    scale = max(w / sw, h / sh)
    rw, rh = max(math.ceil(sw * scale), w), max(math.ceil(sh * scale), h)
    # image's Triangle filter widens its support when shrinking: INTER_AREA is the closest there.
    interp = cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR
    big = cv2.resize(src, (rw, rh), interpolation=interp)
    x0, y0 = (rw - w) // 2, (rh - h) // 2
    return big[y0:y0 + h, x0:x0 + w]


def stream_frames(src, w, h):
    big = fill(src, w + SHIFT, h + SHIFT)
    return [np.ascontiguousarray(big[(k * 7) % SHIFT:(k * 7) % SHIFT + h, k:k + w])
            for k in range(SHIFT)]


def harris_peer(n):
    orb = cv2.ORB_create(nfeatures=n)
    kernel = np.ones((5, 5), np.uint8)

    def detect_describe(img):
        f = cv2.GaussianBlur(img.astype(np.float32), (3, 3), 0, borderType=cv2.BORDER_REPLICATE)
        r = cv2.cornerHarris(f, 3, 3, 0.04, borderType=cv2.BORDER_REPLICATE)
        keep = (r > 0) & (r >= 0.01 * r.max()) & (r == cv2.dilate(r, kernel))
        ys, xs = np.nonzero(keep)
        if len(ys) > n:
            top = np.argpartition(r[ys, xs], -n)[-n:]
            ys, xs = ys[top], xs[top]
        kps = [cv2.KeyPoint(float(x), float(y), 31.0, 0.0, float(r[y, x]))
               for y, x in zip(ys.tolist(), xs.tolist())]
        return orb.compute(img, kps)

    return detect_describe


def orb_peer(n):
    orb = cv2.ORB_create(nfeatures=n)
    return lambda img: orb.detectAndCompute(img, None)


PEERS = {"harris": ("cv2 Harris+ORB desc", harris_peer), "orb": ("cv2 ORB", orb_peer)}


def percentile(values, p):
    v = sorted(values)
    rank = math.ceil(p / 100.0 * len(v))
    return v[min(max(rank, 1), len(v)) - 1]


def run_stream(frames_in, detect_describe, frames):
    bf = cv2.BFMatcher(cv2.NORM_HAMMING)
    prev = None
    lat, kps, matches = [], [], []
    t0 = time.perf_counter()
    for i in range(frames + WARM):
        img = frames_in[i % len(frames_in)]
        t = time.perf_counter()
        kp, desc = detect_describe(img)
        m = 0
        if prev is not None and desc is not None and len(desc) >= 2 and len(prev) >= 2:
            pairs = bf.knnMatch(desc, prev, k=2)
            m = sum(1 for p in pairs if len(p) == 2 and p[0].distance < RATIO * p[1].distance)
        prev = desc
        dt = (time.perf_counter() - t) * 1e3
        if i + 1 == WARM:
            t0 = time.perf_counter()
        elif i >= WARM:
            lat.append(dt)
            kps.append(len(kp))
            matches.append(m)
    total = time.perf_counter() - t0
    return {
        "fps": len(lat) / total,
        "latency_p50_ms": percentile(lat, 50),
        "latency_p99_ms": percentile(lat, 99),
        "keypoints_mean": statistics.fmean(kps),
        "keypoints_median": statistics.median(kps),
        "matches_median": statistics.median(matches),
    }


def parse_sizes(text):
    try:
        return [tuple(int(v) for v in s.lower().split("x")) for s in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad --sizes {text!r}: want WxH[,WxH...]")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("image", nargs="?", default=os.path.join(ROOT, "data", "oxford-boat", "img1.pgm"))
    ap.add_argument("--frames", type=int, default=100, help="timed frames per size (after 5 warm-up)")
    ap.add_argument("--sizes", type=parse_sizes, default=[(640, 480), (1920, 1080)])
    ap.add_argument("--threads", type=int, help="cv2.setNumThreads (default: OpenCV's, all cores)")
    ap.add_argument("--max-keypoints", type=int, default=10000)
    ap.add_argument("--peers", default="harris,orb", help="comma list of: " + ",".join(PEERS))
    ap.add_argument("--json", help="write the results as JSON to FILE ('-': stdout)")
    args = ap.parse_args()
    if args.frames < 1:
        ap.error("--frames must be at least 1")
    peers = args.peers.split(",")
    for p in peers:
        if p not in PEERS:
            ap.error(f"unknown peer {p!r}")
    src = cv2.imread(args.image, cv2.IMREAD_GRAYSCALE)
    if src is None:
        sys.exit(f"cannot read {args.image}")
    if args.threads is not None:
        cv2.setNumThreads(args.threads)
    report = {"opencv": cv2.__version__, "threads": cv2.getNumThreads(), "cpus": os.cpu_count(),
              "image": args.image, "frames": args.frames, "warmup": WARM,
              "max_keypoints": args.max_keypoints, "rows": []}
    out = sys.stderr if args.json == "-" else sys.stdout
    print(f"OpenCV {cv2.__version__}, cv2.getNumThreads() = {report['threads']}, "
          f"{args.frames} frames per size (+{WARM} warm-up), cap {args.max_keypoints} keypoints", file=out)
    print(f"{'size':>10} {'peer':<20} {'frames/s':>9} {'p50 ms':>9} {'p99 ms':>9} "
          f"{'kps mean':>9} {'matches':>8}", file=out)
    for w, h in args.sizes:
        frames_in = stream_frames(src, w, h)
        for p in peers:
            name, make = PEERS[p]
            r = run_stream(frames_in, make(args.max_keypoints), args.frames)
            r.update({"width": w, "height": h, "peer": p, "name": name})
            report["rows"].append(r)
            print(f"{f'{w}x{h}':>10} {name:<20} {r['fps']:>9.1f} {r['latency_p50_ms']:>9.2f} "
                  f"{r['latency_p99_ms']:>9.2f} {r['keypoints_mean']:>9.0f} {r['matches_median']:>8.0f}",
                  file=out, flush=True)
    if args.json == "-":
        print(json.dumps(report, indent=1))
    elif args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
