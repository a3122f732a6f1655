#!/usr/bin/env python3
"""A held-out quality sequence in the Oxford layout, from an image that is not boat.

    scripts/data/make-heldout-sequence.py IMAGE OUT_DIR
    surfcl eval OUT_DIR --backend cpu

IMAGE is any real photograph (the team uses "Elephants" from Debian's mate-backgrounds, GPL-2+,
as scripts/bench/cpu-ab.sh downloads it; it is never committed). img1 is the image at
960x540 in gray; img2..img5 are it warped by known homographies (rotations by 20, 45 and 90
degrees with zooms of 1.0, 0.9 and 1.2 about the centre, and a perspective), written as
H1to2p..H1to5p. Needs numpy and opencv-python-headless.
"""
import sys

import cv2
import numpy as np


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    source = cv2.imread(sys.argv[1], cv2.IMREAD_GRAYSCALE)
    if source is None:
        sys.exit(f"cannot read {sys.argv[1]}")
    out = sys.argv[2]
    source = cv2.resize(source, (960, 540), interpolation=cv2.INTER_AREA)
    height, width = source.shape
    cv2.imwrite(f"{out}/img1.pgm", source)
    centre = (width / 2, height / 2)

    def rotation(degrees: float, zoom: float) -> np.ndarray:
        return np.vstack([cv2.getRotationMatrix2D(centre, degrees, zoom), [0, 0, 1]])

    homographies = [
        rotation(20, 1.0),
        rotation(45, 0.9),
        rotation(90, 1.2),
        np.array([[0.9, 0.1, 30], [-0.05, 0.95, 20], [0.0002, 0.0001, 1]]),
    ]
    for n, h in enumerate(homographies, start=2):
        warped = cv2.warpPerspective(source, h, (width, height), flags=cv2.INTER_LINEAR)
        cv2.imwrite(f"{out}/img{n}.pgm", warped)
        np.savetxt(f"{out}/H1to{n}p", h)


if __name__ == "__main__":
    main()
