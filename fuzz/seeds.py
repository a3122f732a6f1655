#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (fuzz/corpus/<target>/seed-*) from real data:
crops of the Oxford boat image and the H1to*p homographies. Run from the repository root:
python3 fuzz/seeds.py. Files stay small (the whole corpus is well under 2 MB)."""
import os, struct, sys, zlib

ROOT = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(ROOT, "..", "data", "oxford-boat")
sys.path.insert(0, os.path.join(ROOT, "..", "scripts", "data"))
from pgm import read_pgm  # noqa: E402 (found through the path above)


def crop(img, x, y, cw, ch, step=1):
    w, _, px = img
    return bytes(px[(y + j * step) * w + x + i * step] for j in range(ch) for i in range(cw))


def pgm(w, h, px):
    return b"P5\n%d %d\n255\n" % (w, h) + px


def png(w, h, px, color=False):
    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
    bpp = 3 if color else 1
    rows = b""
    for j in range(h):
        row = px[j * w:(j + 1) * w]
        if color:
            row = bytes(v for p in row for v in (p, 255 - p, p // 2))
        rows += b"\0" + row
    ihdr = struct.pack(">IIBBBBB", w, h, 8, 2 if color else 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def write(target, name, data):
    d = os.path.join(ROOT, "corpus", target)
    os.makedirs(d, exist_ok=True)
    open(os.path.join(d, "seed-" + name), "wb").write(data)


img1 = read_pgm(os.path.join(DATA, "img1.pgm"))
img3 = read_pgm(os.path.join(DATA, "img3.pgm"))
crops = {
    "boat1-64": crop(img1, 300, 200, 64, 64),
    "boat1-64s8": crop(img1, 0, 0, 64, 64, 8),
    "boat3-48": crop(img3, 400, 300, 48, 48),
    "boat1-71x40": crop(img1, 100, 500, 71, 40),
}

# surf_detect: w, h, octaves, step, threshold (flag, u8), upright, capacity, raw_len, pixels.
for name, (w, h) in [("boat1-64", (64, 64)), ("boat1-64s8", (64, 64)),
                     ("boat3-48", (48, 48)), ("boat1-71x40", (71, 40))]:
    write("surf_detect", name + "-s1", bytes([w, h, 4, 1, 1, 4, 0, 63, 0]) + crops[name])
    write("surf_detect", name + "-s2-upright", bytes([w, h, 2, 2, 1, 1, 1, 20, 0]) + crops[name])
    # harris: w, h, k (flag, u8: 41/1024 = 0.04), window, threshold kind + value, scale flag,
    # subpixel, capacity, pixels.
    write("harris_detect", name + "-rel", bytes([w, h, 1, 41, 3, 3, 3, 1, 1, 63]) + crops[name])
    write("harris_detect", name + "-abs-w7", bytes([w, h, 1, 41, 7, 1, 2, 1, 0, 63]) + crops[name])

# packed_responses: grid_w, grid_h (u32 LE), 4 probes (u16, u16, u8), words.
words = crops["boat1-64"][:256]
write("packed_responses", "8x8", struct.pack("<II", 8, 8) + bytes(20) + words)
write("packed_responses", "huge-grid", struct.pack("<II", 0xFFFFFFFF, 0xFFFFFFFF) + bytes(20) + words)
write("packed_responses", "probes", struct.pack("<II", 4, 16) + struct.pack("<HHB", 3, 15, 2) * 4 + words)

# matcher: nq, nq, ratio (flag, u8), sign, cross, max_distance kind, raw flag, mismatch, split,
# then per descriptor: laplacian selector + 64 bytes (from image rows: real-ish texture).
def match_seed(nq, nt, cross, raw, src):
    head = bytes([nq, nt, 1, 204, 1, cross, 0, raw, 1, nq // 2])
    body = b""
    for i in range(nq + nt):
        body += bytes([i % 3]) + src[(i * 61) % (len(src) - 64):][:64]
        if raw:
            body += bytes([1, 5]) + struct.pack("<f", float("nan"))
    return head + body
write("matcher", "plain", match_seed(8, 10, 0, 0, crops["boat1-64"]))
write("matcher", "cross", match_seed(12, 12, 1, 0, crops["boat3-48"]))
write("matcher", "nan", match_seed(6, 7, 1, 1, crops["boat1-64s8"]))

# image_decode: PGM and PNG crops (gray and colour), plus hostile headers.
write("image_decode", "boat1-64.pgm", pgm(64, 64, crops["boat1-64"]))
write("image_decode", "boat3-48.pgm", pgm(48, 48, crops["boat3-48"]))
write("image_decode", "boat1-64.png", png(64, 64, crops["boat1-64"]))
write("image_decode", "boat3-48-rgb.png", png(48, 48, crops["boat3-48"], color=True))
write("image_decode", "huge.pgm", b"P5\n100000 100000\n255\n\0\0\0\0")
write("image_decode", "truncated.png", png(64, 64, crops["boat1-64"])[:80])

# homography_parse: the real files and variants.
for i in range(1, 7):
    write("homography_parse", "H1to%dp" % i, open(os.path.join(DATA, "H1to%dp" % i), "rb").read())
write("homography_parse", "one-line", b"1 0 0 0 1 0 0 0 1\n")
write("homography_parse", "inf", b"1 0 0\n0 inf 0\n0 0 1\n")

# ros_image: height, width (u32 LE), encoding selector, step delta, data length delta, pixels.
for enc, bpp in [(0, 1), (1, 3), (4, 4)]:
    w, h = 48, 48
    write("ros_image", "boat3-48-enc%d" % enc,
          struct.pack("<IIBhh", h, w, enc, 0, 0) + crops["boat3-48"] * bpp)
write("ros_image", "huge", struct.pack("<IIBhh", 100000, 100000, 0, 0, 0) + b"\0" * 16)
# bgr8, rgba8, 8UC1; rgb8 rows padded to a step 7 bytes longer than the pixels; and a body one
# byte short of step * height.
for enc, bpp in [(2, 3), (3, 4), (5, 1)]:
    write("ros_image", "boat3-48-enc%d" % enc,
          struct.pack("<IIBhh", 48, 48, enc, 0, 0) + crops["boat3-48"] * bpp)
rows = crops["boat3-48"] * 3
write("ros_image", "boat3-48-rgb8-padded",
      struct.pack("<IIBhh", 48, 48, 1, 7, 0)
      + b"".join(rows[j * 144:(j + 1) * 144] + b"\x7f" * 7 for j in range(48)))
write("ros_image", "boat3-48-short", struct.pack("<IIBhh", 48, 48, 0, 0, -1) + crops["boat3-48"])
