#!/usr/bin/env python3
"""Compares keypoints of a cross build with the x86 CPU backend's (`surfcl detect --json`).

    compare-keypoints.py firmware FIRMWARE_OUTPUT.txt HOST.json [--tol 1e-3]
        The firmware's lines `x y scale` (3 decimals) against the host's keypoints, in order:
        same count, |dx|, |dy|, |dscale| <= tol (default 1e-3 px; both sides print 3 decimals
        of the same f32 values, so equal results differ by at most one rounding step).
    compare-keypoints.py json OTHER.json HOST.json [--tol 0]
        Two `surfcl detect --json` reports: same count, every keypoint field and descriptor
        component within tol (default 0: bit-identical as printed).

Exit status 0 when they agree, 1 (with the first differences listed) when they do not.
"""
import json
import sys


def fail(msg, diffs=()):
    print(f"compare: MISMATCH: {msg}")
    for d in list(diffs)[:10]:
        print(f"  {d}")
    sys.exit(1)


def parse_firmware(path):
    points, count, stack = [], None, None
    for line in open(path, encoding="utf-8", errors="replace"):
        parts = line.split()
        if len(parts) == 3:
            try:
                points.append(tuple(float(p) for p in parts))
                continue
            except ValueError:
                pass
        if len(parts) == 2 and parts[0] == "keypoints":
            count = int(parts[1])
        elif len(parts) == 2 and parts[0] == "stack_high_water":
            stack = int(parts[1])
        elif parts and parts[0] == "error:":
            fail(f"firmware reported {line.strip()!r}")
    if count is None:
        fail(f"{path}: no 'keypoints N' line (the firmware did not finish)")
    if count != len(points):
        fail(f"{path}: says keypoints {count} but printed {len(points)} lines")
    return points, stack


def main(argv):
    if len(argv) < 4 or argv[1] not in ("firmware", "json"):
        print(__doc__)
        return 2
    mode, other, host = argv[1], argv[2], argv[3]
    tol = float(argv[argv.index("--tol") + 1]) if "--tol" in argv else (1e-3 if mode == "firmware" else 0.0)
    ref = json.load(open(host))
    ref_points = [(k["x"], k["y"], k["scale"]) for k in ref["keypoints"]]
    if mode == "firmware":
        points, stack = parse_firmware(other)
        if len(points) != len(ref_points):
            fail(f"{len(points)} keypoints vs {len(ref_points)} on the host")
        worst, diffs = 0.0, []
        for i, (a, b) in enumerate(zip(points, ref_points)):
            d = max(abs(p - q) for p, q in zip(a, b))
            worst = max(worst, d)
            # 1e-9 absorbs the decimal-to-binary error of reading printed 3-decimal values.
            if d > tol + 1e-9:
                diffs.append(f"#{i}: firmware {a} host {b}")
        if diffs:
            fail(f"{len(diffs)} keypoints differ by more than {tol}", diffs)
        print(f"compare: ok: {len(points)} keypoints, max difference {worst:.2g} px"
              + (f", stack_high_water {stack} B" if stack is not None else ""))
    else:
        other_json = json.load(open(other))
        kps, ref_kps = other_json["keypoints"], ref["keypoints"]
        if len(kps) != len(ref_kps):
            fail(f"{len(kps)} keypoints vs {len(ref_kps)} on the host")
        worst, diffs = 0.0, []
        for i, (a, b) in enumerate(zip(kps, ref_kps)):
            for field in ("x", "y", "scale", "orientation", "response", "laplacian"):
                d = abs(a[field] - b[field])
                worst = max(worst, d)
                if d > tol:
                    diffs.append(f"#{i}.{field}: {a[field]} vs {b[field]}")
        descs, ref_descs = other_json.get("descriptors") or [], ref.get("descriptors") or []
        if len(descs) != len(ref_descs):
            fail(f"{len(descs)} descriptors vs {len(ref_descs)} on the host")
        for i, (a, b) in enumerate(zip(descs, ref_descs)):
            d = max((abs(p - q) for p, q in zip(a, b)), default=0.0)
            worst = max(worst, d)
            if d > tol:
                diffs.append(f"descriptor #{i}: max component difference {d}")
        if diffs:
            fail(f"{len(diffs)} values differ by more than {tol}", diffs)
        print(f"compare: ok: {len(kps)} keypoints and {len(descs)} descriptors, "
              f"max difference {worst:.2g}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
