#!/usr/bin/env python3
"""Derives data/boat-qvga/ (320x240 frames for the microcontroller examples and tests) from the
Oxford boat sequence in data/oxford-boat/: the centre 800x600 of each image, reduced by 2.5 with
exact area averaging, and the ground-truth homographies rewritten for the new pixel grid.

Pure Python (no PIL/numpy), deterministic; run from the repository root:
    python3 scripts/data/make-qvga-boat.py
"""
import os

from pgm import read_pgm

SRC = "data/oxford-boat"
DST = "data/boat-qvga"
OUT_W, OUT_H = 320, 240
FACTOR = 2.5  # input pixels per output pixel
CROP_W, CROP_H = int(OUT_W * FACTOR), int(OUT_H * FACTOR)


def weights(i):
    """Input indices and overlap weights of output index i (interval [2.5 i, 2.5 i + 2.5))."""
    lo, hi = FACTOR * i, FACTOR * (i + 1)
    out, k = [], int(lo)
    while k < hi:
        overlap = min(hi, k + 1) - max(lo, k)
        if overlap > 0:
            out.append((k, overlap))
        k += 1
    return out


def reduce(w, pixels, ox, oy):
    cols = [weights(i) for i in range(OUT_W)]
    rows = [weights(j) for j in range(OUT_H)]
    out = bytearray()
    for j in range(OUT_H):
        for i in range(OUT_W):
            acc = 0.0
            for (y, wy) in rows[j]:
                base = (oy + y) * w + ox
                for (x, wx) in cols[i]:
                    acc += wy * wx * pixels[base + x]
            out.append(min(255, int(acc / (FACTOR * FACTOR) + 0.5)))
    return bytes(out)


def read_h(path):
    return [[float(v) for v in line.split()] for line in open(path) if line.strip()]


def matmul(a, b):
    return [[sum(a[i][k] * b[k][j] for k in range(3)) for j in range(3)] for i in range(3)]


def main():
    os.makedirs(DST, exist_ok=True)
    offsets = None
    for n in range(1, 7):
        w, h, pixels = read_pgm(f"{SRC}/img{n}.pgm")
        ox, oy = (w - CROP_W) // 2, (h - CROP_H) // 2
        offsets = (ox, oy)
        small = reduce(w, pixels, ox, oy)
        with open(f"{DST}/img{n}.pgm", "wb") as f:
            f.write(b"P5\n%d %d\n255\n" % (OUT_W, OUT_H) + small)
    # Output pixel centre i sits at input coordinate o + 2.5 i + 0.75 (pixel centres at
    # integers): x_out = (x_in - o - 0.75) / 2.5. H' = T H T^-1.
    ox, oy = offsets
    s = 1.0 / FACTOR
    t = [[s, 0.0, -s * (ox + 0.75)], [0.0, s, -s * (oy + 0.75)], [0.0, 0.0, 1.0]]
    t_inv = [[FACTOR, 0.0, ox + 0.75], [0.0, FACTOR, oy + 0.75], [0.0, 0.0, 1.0]]
    for n in range(2, 7):
        hn = matmul(matmul(t, read_h(f"{SRC}/H1to{n}p")), t_inv)
        hn = [[v / hn[2][2] for v in row] for row in hn]
        with open(f"{DST}/H1to{n}p", "w") as f:
            for row in hn:
                f.write("   ".join(f"{v:.10e}" for v in row) + "\n")


if __name__ == "__main__":
    main()
