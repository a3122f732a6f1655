//! Annotated pictures for `--draw`: keypoints on the input image, and match lines between two
//! images placed side by side. Pixels are written directly (Bresenham lines, midpoint circles),
//! clipped to the picture, so there is no drawing dependency and nothing can index out of bounds.
//!
//! Conventions:
//! - A keypoint is a circle of radius `round(2.5 * scale)` (at least 2 px): SURF's `scale` is
//!   the Gaussian sigma of the blob (`1.2 / 9 *` filter size) and 2.5 sigma is about the blob's
//!   visible edge; OpenSURF draws the same radius. Harris points carry their fixed descriptor scale.
//! - Colour by the sign of the Laplacian: red for bright blobs on a dark ground (`laplacian == -1`),
//!   blue for dark blobs on a bright ground (`+1`), green for Harris corners (`0`).
//! - A tick from the centre to the circle at the keypoint's orientation (pointing right for
//!   upright keypoints, whose orientation is 0).
//! - Matches: a line from the point in the left image to the point in the right one; with a
//!   homography, green when the match is correct and red when it is wrong; yellow otherwise.

use std::path::Path;

use image::{Rgb, RgbImage};
use surfcl_core::Keypoint;

use crate::error::Error;
use crate::io::OwnedGray;

/// Red: bright blob (negative Laplacian) / wrong match.
pub const RED: Rgb<u8> = Rgb([255, 40, 40]);
/// Blue: dark blob (positive Laplacian).
pub const BLUE: Rgb<u8> = Rgb([40, 120, 255]);
/// Green: Harris corner / correct match.
pub const GREEN: Rgb<u8> = Rgb([40, 220, 40]);
/// Yellow: match without ground truth.
pub const YELLOW: Rgb<u8> = Rgb([255, 220, 0]);

/// The grey image as RGB (all three channels equal).
pub fn gray_to_rgb(gray: &OwnedGray) -> RgbImage {
    let mut out = RgbImage::new(gray.width as u32, gray.height as u32);
    for (dst, &v) in out.pixels_mut().zip(&gray.pixels) {
        *dst = Rgb([v, v, v]);
    }
    out
}

/// Sets one pixel if it lies inside the picture.
fn plot(img: &mut RgbImage, x: i64, y: i64, colour: Rgb<u8>) {
    if x >= 0
        && y >= 0
        && (x as u64) < u64::from(img.width())
        && (y as u64) < u64::from(img.height())
    {
        img.put_pixel(x as u32, y as u32, colour);
    }
}

/// Draws a line with Bresenham's algorithm (all octants), clipped to the picture.
pub fn line(img: &mut RgbImage, from: (i64, i64), to: (i64, i64), colour: Rgb<u8>) {
    let (mut x0, mut y0) = from;
    let (x1, y1) = to;
    let dx = (x1 - x0).abs();
    let dy = -(y1 - y0).abs();
    let sx = if x0 < x1 { 1 } else { -1 };
    let sy = if y0 < y1 { 1 } else { -1 };
    let mut err = dx + dy;
    // Bound the loop by the line length so that absurd coordinates cannot spin for long.
    for _ in 0..=(dx - dy) {
        plot(img, x0, y0, colour);
        if x0 == x1 && y0 == y1 {
            break;
        }
        let e2 = 2 * err;
        if e2 >= dy {
            err += dy;
            x0 += sx;
        }
        if e2 <= dx {
            err += dx;
            y0 += sy;
        }
    }
}

/// Draws a circle outline with the midpoint algorithm, clipped to the picture.
pub fn circle(img: &mut RgbImage, centre: (i64, i64), radius: i64, colour: Rgb<u8>) {
    let (cx, cy) = centre;
    let (mut x, mut y) = (radius, 0i64);
    let mut err = 1 - radius;
    while x >= y {
        for (px, py) in [
            (x, y),
            (y, x),
            (-y, x),
            (-x, y),
            (-x, -y),
            (-y, -x),
            (y, -x),
            (x, -y),
        ] {
            plot(img, cx + px, cy + py, colour);
        }
        y += 1;
        if err < 0 {
            err += 2 * y + 1;
        } else {
            x -= 1;
            err += 2 * (y - x) + 1;
        }
    }
}

/// The colour of a keypoint (see module docs).
pub fn keypoint_colour(kp: &Keypoint) -> Rgb<u8> {
    match kp.laplacian {
        l if l < 0 => RED,
        0 => GREEN,
        _ => BLUE,
    }
}

/// Rounds a float coordinate to a pixel index; non-finite values go far outside the picture.
fn px(v: f32) -> i64 {
    if v.is_finite() {
        (v.round() as i64).clamp(-1 << 30, 1 << 30)
    } else {
        -1 << 30
    }
}

/// The drawn radius of a keypoint: `round(2.5 * scale)`, at least 2 px, at most 1000 px.
pub fn keypoint_radius(kp: &Keypoint) -> i64 {
    px(2.5 * kp.scale).clamp(2, 1000)
}

/// Draws each keypoint as a circle with an orientation tick, offset by `dx` pixels (used for the
/// right image of a side-by-side picture).
pub fn draw_keypoints(img: &mut RgbImage, keypoints: &[Keypoint], dx: i64) {
    for kp in keypoints {
        let colour = keypoint_colour(kp);
        let (cx, cy) = (px(kp.x) + dx, px(kp.y));
        let r = keypoint_radius(kp);
        circle(img, (cx, cy), r, colour);
        let r = r as f32;
        let tip = (
            cx + px(r * kp.orientation.cos()),
            cy + px(r * kp.orientation.sin()),
        );
        line(img, (cx, cy), tip, colour);
    }
}

/// The input image with its keypoints drawn on it.
pub fn keypoint_picture(gray: &OwnedGray, keypoints: &[Keypoint]) -> RgbImage {
    let mut img = gray_to_rgb(gray);
    draw_keypoints(&mut img, keypoints, 0);
    img
}

/// One match line to draw: the two points and whether the match is correct (`None`: unknown).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MatchLine {
    /// Point in the first (left) image.
    pub from: (f32, f32),
    /// Point in the second (right) image, in that image's coordinates.
    pub to: (f32, f32),
    /// Correctness under the ground-truth homography, when there is one.
    pub correct: Option<bool>,
}

/// The two images side by side (first left, second right, tops aligned, black padding) with the
/// matched keypoints as small circles and one line per match.
pub fn match_picture(left: &OwnedGray, right: &OwnedGray, matches: &[MatchLine]) -> RgbImage {
    let width = left.width + right.width;
    let height = left.height.max(right.height);
    let mut img = RgbImage::new(width as u32, height as u32);
    let (l, r) = (gray_to_rgb(left), gray_to_rgb(right));
    for (x, y, p) in l.enumerate_pixels() {
        img.put_pixel(x, y, *p);
    }
    for (x, y, p) in r.enumerate_pixels() {
        img.put_pixel(x + left.width as u32, y, *p);
    }
    let dx = left.width as i64;
    for m in matches {
        let colour = match m.correct {
            Some(true) => GREEN,
            Some(false) => RED,
            None => YELLOW,
        };
        let a = (px(m.from.0), px(m.from.1));
        let b = (px(m.to.0) + dx, px(m.to.1));
        circle(&mut img, a, 3, colour);
        circle(&mut img, b, 3, colour);
        line(&mut img, a, b, colour);
    }
    img
}

/// Saves a picture as PNG.
pub fn save_png(img: &RgbImage, path: &Path) -> Result<(), Error> {
    img.save_with_format(path, image::ImageFormat::Png)
        .map_err(|e| match e {
            image::ImageError::IoError(source) => Error::io(path, source),
            other => Error::Encode {
                path: path.to_path_buf(),
                message: other.to_string(),
            },
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(img: &RgbImage, colour: Rgb<u8>) -> usize {
        img.pixels().filter(|p| **p == colour).count()
    }

    #[test]
    fn line_hits_both_ends_and_has_chebyshev_length() {
        for &(a, b) in &[
            ((0, 0), (9, 3)),
            ((9, 9), (0, 2)),
            ((3, 0), (3, 9)),
            ((5, 5), (5, 5)),
        ] {
            let mut img = RgbImage::new(10, 10);
            line(&mut img, a, b, RED);
            assert_eq!(*img.get_pixel(a.0 as u32, a.1 as u32), RED);
            assert_eq!(*img.get_pixel(b.0 as u32, b.1 as u32), RED);
            let len = (b.0 - a.0).abs().max((b.1 - a.1).abs()) as usize + 1;
            assert_eq!(count(&img, RED), len);
        }
    }

    #[test]
    fn circle_points_are_near_the_radius_and_clipping_is_safe() {
        let mut img = RgbImage::new(41, 41);
        circle(&mut img, (20, 20), 10, BLUE);
        let mut n = 0;
        for (x, y, p) in img.enumerate_pixels() {
            if *p == BLUE {
                n += 1;
                let d = (((x as f64) - 20.0).powi(2) + ((y as f64) - 20.0).powi(2)).sqrt();
                assert!((d - 10.0).abs() < 0.75, "pixel at distance {d}");
            }
        }
        assert!(n > 50);
        // Entirely or partly outside: no panic.
        circle(&mut img, (-100, 5), 10, RED);
        circle(&mut img, (40, 40), 500, RED);
        line(&mut img, (-1000, -1000), (1000, 1000), RED);
    }

    #[test]
    fn keypoint_colours_follow_the_laplacian() {
        let kp = |laplacian| Keypoint {
            x: 10.0,
            y: 10.0,
            scale: 2.0,
            laplacian,
            ..Keypoint::default()
        };
        assert_eq!(keypoint_colour(&kp(-1)), RED);
        assert_eq!(keypoint_colour(&kp(1)), BLUE);
        assert_eq!(keypoint_colour(&kp(0)), GREEN);
        let gray = OwnedGray {
            width: 21,
            height: 21,
            pixels: vec![0; 21 * 21],
        };
        let img = keypoint_picture(&gray, &[kp(1)]);
        // Radius 5 circle plus the tick towards +x: (15, 10) is on both.
        assert_eq!(*img.get_pixel(15, 10), BLUE);
        assert_eq!(*img.get_pixel(12, 10), BLUE);
        assert_eq!(*img.get_pixel(10, 12), Rgb([0, 0, 0]));
    }

    #[test]
    fn match_picture_is_side_by_side() {
        let a = OwnedGray {
            width: 10,
            height: 8,
            pixels: vec![100; 80],
        };
        let b = OwnedGray {
            width: 6,
            height: 12,
            pixels: vec![200; 72],
        };
        let img = match_picture(
            &a,
            &b,
            &[MatchLine {
                from: (1.0, 1.0),
                to: (1.0, 1.0),
                correct: Some(true),
            }],
        );
        assert_eq!(img.dimensions(), (16, 12));
        assert_eq!(*img.get_pixel(9, 7), Rgb([100; 3]));
        assert_eq!(*img.get_pixel(15, 11), Rgb([200; 3]));
        assert_eq!(*img.get_pixel(0, 11), Rgb([0; 3]));
        assert_eq!(*img.get_pixel(5, 1), GREEN);
    }
}
