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
//!   homography, green when the match is correct and red when it is wrong; yellow otherwise. A
//!   white bar separates the two images. At most [`DEFAULT_MATCH_LINES`] matches are drawn unless
//!   the caller asks for all (`--draw-all`): evenly spaced in query order, so the same every run
//!   and with the share of correct lines of the whole set.
//! - A legend in the bottom-left corner (on a darkened band, with a built-in 5x7 bitmap font, so
//!   no font file is needed) gives the counts and explains the colours; it is left out when the
//!   picture is too small to hold it.
//! - The picture format follows the file extension ([`picture_format`]): PNG, JPEG or PPM.

use std::path::Path;

use image::{ImageFormat, Rgb, RgbImage};
use surfcl_core::Keypoint;

use crate::io::OwnedGray;
use surfcl_gpu::Error;

/// Red: bright blob (negative Laplacian) / wrong match.
pub const RED: Rgb<u8> = Rgb([255, 40, 40]);
/// Blue: dark blob (positive Laplacian).
pub const BLUE: Rgb<u8> = Rgb([40, 120, 255]);
/// Green: Harris corner / correct match.
pub const GREEN: Rgb<u8> = Rgb([40, 220, 40]);
/// Yellow: match without ground truth.
pub const YELLOW: Rgb<u8> = Rgb([255, 220, 0]);
/// White: legend text and the bar between the two images of a match picture.
pub const WHITE: Rgb<u8> = Rgb([255, 255, 255]);

/// Match lines drawn by default (see module docs).
pub const DEFAULT_MATCH_LINES: usize = 200;

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

/// The input image with its keypoints drawn on it, and a legend (module docs).
pub fn keypoint_picture(gray: &OwnedGray, keypoints: &[Keypoint]) -> RgbImage {
    let mut img = gray_to_rgb(gray);
    draw_keypoints(&mut img, keypoints, 0);
    let count = |f: fn(i8) -> bool| keypoints.iter().filter(|k| f(k.laplacian)).count();
    let (bright, dark, corners) = (count(|l| l < 0), count(|l| l > 0), count(|l| l == 0));
    let mut legend = vec![(
        format!(
            "{} keypoints; circle radius 2.5 x scale, tick = orientation",
            keypoints.len()
        ),
        WHITE,
    )];
    if bright + dark > 0 {
        legend.push((format!("red: {bright} bright blobs (laplacian -)"), RED));
        legend.push((format!("blue: {dark} dark blobs (laplacian +)"), BLUE));
    }
    if corners > 0 {
        legend.push((format!("green: {corners} harris corners"), GREEN));
    }
    draw_legend(&mut img, &legend);
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
    /// Descriptor distance of the match.
    pub distance: f32,
}

/// The indices of at most `limit` of `n` items, evenly spaced and always the same (the first
/// item included); all of them when `n <= limit`.
pub fn evenly_chosen(n: usize, limit: usize) -> Vec<usize> {
    if n <= limit {
        return (0..n).collect();
    }
    // i * n / limit for i < limit: strictly increasing because n > limit; u128 cannot overflow.
    (0..limit)
        .map(|i| (i as u128 * n as u128 / limit as u128) as usize)
        .collect()
}

/// The two images side by side (first left, second right, tops aligned, black padding, a white
/// bar between them) with at most `limit` of the matches (see [`evenly_chosen`]) as small circles
/// joined by a line, and a legend with the counts (module docs).
pub fn match_picture(
    left: &OwnedGray,
    right: &OwnedGray,
    matches: &[MatchLine],
    limit: usize,
) -> RgbImage {
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
    // The bar covers the first columns of the right image (the picture keeps its size).
    let bar = if left.width >= 64 && right.width >= 64 {
        3
    } else {
        1
    };
    for x in dx..dx + bar {
        line(&mut img, (x, 0), (x, height as i64 - 1), WHITE);
    }
    let shown = evenly_chosen(matches.len(), limit);
    for m in shown.iter().filter_map(|&i| matches.get(i)) {
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
    let mut legend = vec![(
        if shown.len() < matches.len() {
            format!(
                "shown {} of {} matches (evenly chosen; --draw-all draws all)",
                shown.len(),
                matches.len()
            )
        } else {
            format!("{} matches, all shown", matches.len())
        },
        WHITE,
    )];
    let correct = matches.iter().filter(|m| m.correct == Some(true)).count();
    let wrong = matches.iter().filter(|m| m.correct == Some(false)).count();
    if correct + wrong > 0 {
        legend.push((
            format!("green: {correct} correct by the homography (within 3 px)"),
            GREEN,
        ));
        legend.push((format!("red: {wrong} wrong"), RED));
    } else {
        legend.push((
            "yellow: no ground truth (--homography FILE colours them)".to_string(),
            YELLOW,
        ));
    }
    draw_legend(&mut img, &legend);
    img
}

/// The extension of `path`, lower case.
fn extension(path: &Path) -> Option<String> {
    path.extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
}

/// The picture format for `path`, from its extension: `.png`, `.jpg`/`.jpeg` or `.ppm`. Any other
/// extension (or none) is refused with a message that lists these.
pub fn picture_format(path: &Path) -> Result<ImageFormat, Error> {
    match extension(path).as_deref() {
        Some("png") => Ok(ImageFormat::Png),
        Some("jpg" | "jpeg") => Ok(ImageFormat::Jpeg),
        Some("ppm") => Ok(ImageFormat::Pnm),
        other => Err(Error::InvalidArgument(format!(
            "{}: cannot tell the picture format from {}: use .png, .jpg/.jpeg or .ppm",
            path.display(),
            other.map_or("a name without extension".to_string(), |e| format!(
                "the extension .{e}"
            ))
        ))),
    }
}

/// Encodes a picture in `format` (`path` only names the file in errors). PNM is written as a
/// binary PPM (`P6`), what the `.ppm` extension promises.
pub fn encode(img: &RgbImage, format: ImageFormat, path: &Path) -> Result<Vec<u8>, Error> {
    use image::ImageEncoder;
    use image::codecs::pnm::{PnmEncoder, PnmSubtype, SampleEncoding};
    let error = |e: image::ImageError| Error::Encode {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    let mut bytes = Vec::new();
    if format == ImageFormat::Pnm {
        PnmEncoder::new(&mut bytes)
            .with_subtype(PnmSubtype::Pixmap(SampleEncoding::Binary))
            .write_image(
                img.as_raw(),
                img.width(),
                img.height(),
                image::ExtendedColorType::Rgb8,
            )
            .map_err(error)?;
    } else {
        img.write_to(&mut std::io::Cursor::new(&mut bytes), format)
            .map_err(error)?;
    }
    Ok(bytes)
}

/// Glyphs of the built-in 5x7 font: rows top to bottom, bit 4 the leftmost column. Letters are
/// drawn upper case.
fn glyph(c: char) -> [u8; 7] {
    match c.to_ascii_uppercase() {
        'A' => [0x0E, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11],
        'B' => [0x1E, 0x11, 0x11, 0x1E, 0x11, 0x11, 0x1E],
        'C' => [0x0E, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0E],
        'D' => [0x1E, 0x11, 0x11, 0x11, 0x11, 0x11, 0x1E],
        'E' => [0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x1F],
        'F' => [0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x10],
        'G' => [0x0E, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0F],
        'H' => [0x11, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11],
        'I' => [0x0E, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E],
        'J' => [0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0C],
        'K' => [0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11],
        'L' => [0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1F],
        'M' => [0x11, 0x1B, 0x15, 0x15, 0x11, 0x11, 0x11],
        'N' => [0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11],
        'O' => [0x0E, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E],
        'P' => [0x1E, 0x11, 0x11, 0x1E, 0x10, 0x10, 0x10],
        'Q' => [0x0E, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0D],
        'R' => [0x1E, 0x11, 0x11, 0x1E, 0x14, 0x12, 0x11],
        'S' => [0x0F, 0x10, 0x10, 0x0E, 0x01, 0x01, 0x1E],
        'T' => [0x1F, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04],
        'U' => [0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E],
        'V' => [0x11, 0x11, 0x11, 0x11, 0x11, 0x0A, 0x04],
        'W' => [0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0A],
        'X' => [0x11, 0x11, 0x0A, 0x04, 0x0A, 0x11, 0x11],
        'Y' => [0x11, 0x11, 0x11, 0x0A, 0x04, 0x04, 0x04],
        'Z' => [0x1F, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1F],
        '0' => [0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E],
        '1' => [0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E],
        '2' => [0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F],
        '3' => [0x1F, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0E],
        '4' => [0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02],
        '5' => [0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E],
        '6' => [0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E],
        '7' => [0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08],
        '8' => [0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E],
        '9' => [0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C],
        ' ' => [0; 7],
        '.' => [0, 0, 0, 0, 0, 0x0C, 0x0C],
        ',' => [0, 0, 0, 0, 0x0C, 0x04, 0x08],
        ':' => [0, 0x0C, 0x0C, 0, 0x0C, 0x0C, 0],
        ';' => [0, 0x0C, 0x0C, 0, 0x0C, 0x04, 0x08],
        '/' => [0, 0x01, 0x02, 0x04, 0x08, 0x10, 0],
        '(' => [0x02, 0x04, 0x08, 0x08, 0x08, 0x04, 0x02],
        ')' => [0x08, 0x04, 0x02, 0x02, 0x02, 0x04, 0x08],
        '-' => [0, 0, 0, 0x1F, 0, 0, 0],
        '+' => [0, 0x04, 0x04, 0x1F, 0x04, 0x04, 0],
        '=' => [0, 0, 0x1F, 0, 0x1F, 0, 0],
        '%' => [0x18, 0x19, 0x02, 0x04, 0x08, 0x13, 0x03],
        '\'' => [0x0C, 0x04, 0x08, 0, 0, 0, 0],
        _ => [0x0E, 0x11, 0x01, 0x02, 0x04, 0, 0x04], // '?'
    }
}

/// Width of one character cell of the font (5 columns and a gap), in font pixels.
const CELL_W: i64 = 6;
/// Height of one text line (7 rows and a gap), in font pixels.
const CELL_H: i64 = 9;

/// Draws `text` with its top-left corner at `(x, y)`, each font pixel a `scale x scale` square.
pub fn text(img: &mut RgbImage, (x, y): (i64, i64), s: &str, scale: i64, colour: Rgb<u8>) {
    for (i, c) in s.chars().enumerate() {
        let left = x + i as i64 * CELL_W * scale;
        for (row, bits) in glyph(c).iter().enumerate() {
            for col in 0..5i64 {
                if bits >> (4 - col) & 1 == 1 {
                    for dy in 0..scale {
                        for dx in 0..scale {
                            plot(
                                img,
                                left + col * scale + dx,
                                y + row as i64 * scale + dy,
                                colour,
                            );
                        }
                    }
                }
            }
        }
    }
}

/// Draws the legend lines in the bottom-left corner on a darkened band, at a font scale that
/// suits the picture's size; nothing when even scale 1 does not fit.
fn draw_legend(img: &mut RgbImage, lines: &[(String, Rgb<u8>)]) {
    let (w, h) = (i64::from(img.width()), i64::from(img.height()));
    let longest = lines
        .iter()
        .map(|(t, _)| t.chars().count())
        .max()
        .unwrap_or(0) as i64;
    let margin = 4;
    let fits = |scale: i64| {
        longest * CELL_W * scale + 2 * margin <= w
            && lines.len() as i64 * CELL_H * scale + 2 * margin <= h / 3
    };
    let Some(scale) = (1..=3).rev().find(|&s| fits(s)) else {
        return;
    };
    let band_w = longest * CELL_W * scale + 2 * margin;
    let band_h = lines.len() as i64 * CELL_H * scale + 2 * margin;
    let top = h - band_h;
    for y in top.max(0)..h {
        for x in 0..band_w.min(w) {
            // In range: 0 <= x < w and 0 <= y < h, both from u32 sizes.
            let p = img.get_pixel_mut(x as u32, y as u32);
            p.0 = p.0.map(|v| v / 4);
        }
    }
    for (i, (line_text, colour)) in lines.iter().enumerate() {
        let y = top + margin + i as i64 * CELL_H * scale;
        text(img, (margin, y), line_text, scale, *colour);
    }
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
                distance: 0.1,
            }],
            DEFAULT_MATCH_LINES,
        );
        assert_eq!(img.dimensions(), (16, 12));
        assert_eq!(*img.get_pixel(9, 7), Rgb([100; 3]));
        assert_eq!(*img.get_pixel(15, 11), Rgb([200; 3]));
        assert_eq!(*img.get_pixel(0, 11), Rgb([0; 3]));
        assert_eq!(*img.get_pixel(5, 1), GREEN);
    }

    #[test]
    fn evenly_chosen_is_deterministic_spread_and_bounded() {
        assert_eq!(evenly_chosen(5, 200), vec![0, 1, 2, 3, 4]);
        assert_eq!(evenly_chosen(10, 5), vec![0, 2, 4, 6, 8]);
        let big = evenly_chosen(803, 200);
        assert_eq!(big.len(), 200);
        assert!(big.windows(2).all(|w| w[0] < w[1] && w[1] - w[0] <= 5));
        assert!(*big.last().unwrap() >= 803 - 5);
        assert!(evenly_chosen(usize::MAX, 3).windows(2).all(|w| w[0] < w[1]));
        assert!(evenly_chosen(7, 0).is_empty());
    }

    fn grey(width: usize, height: usize, v: u8) -> OwnedGray {
        OwnedGray {
            width,
            height,
            pixels: vec![v; width * height],
        }
    }

    #[test]
    fn match_picture_draws_only_the_chosen_lines_with_bar_and_legend() {
        let (left, right) = (grey(400, 300, 128), grey(400, 300, 128));
        // One horizontal match per row: line k at y = k.
        let lines: Vec<MatchLine> = (0..300)
            .map(|k| MatchLine {
                from: (20.0, k as f32),
                to: (380.0, k as f32),
                correct: Some(k % 2 == 0),
                distance: 0.1,
            })
            .collect();
        let img = match_picture(&left, &right, &lines, 10);
        let chosen = evenly_chosen(300, 10);
        // Away from the circles, the legend (bottom left) and the bar: x = 200.
        for y in 0..200u32 {
            let drawn = *img.get_pixel(200, y) != Rgb([128; 3]);
            assert_eq!(drawn, chosen.contains(&(y as usize)), "row {y}");
        }
        // The bar between the images, where no line passes.
        assert_eq!(*img.get_pixel(400, 1), WHITE);
        assert_eq!(*img.get_pixel(402, 1), WHITE);
        assert_eq!(*img.get_pixel(403, 1), Rgb([128; 3]));
        // The legend: white text on a darkened band in the bottom-left corner.
        let band = |x: u32, y: u32| img.get_pixel(x, y).0;
        assert_eq!(band(1, 299), [32; 3], "darkened");
        let text = (0..300u32)
            .flat_map(|x| (250..300u32).map(move |y| (x, y)))
            .filter(|&(x, y)| *img.get_pixel(x, y) == WHITE)
            .count();
        assert!(text > 100, "{text} white legend pixels");
        let all = match_picture(&left, &right, &lines, usize::MAX);
        let rows = (0..200u32)
            .filter(|&y| *all.get_pixel(200, y) != Rgb([128; 3]))
            .count();
        assert_eq!(rows, 200, "--draw-all draws every line");
    }

    #[test]
    fn keypoint_picture_has_a_legend_when_it_fits() {
        let kp = Keypoint {
            x: 50.0,
            y: 50.0,
            scale: 2.0,
            laplacian: 1,
            ..Keypoint::default()
        };
        let img = keypoint_picture(&grey(400, 300, 100), &[kp]);
        let white = img.pixels().filter(|p| **p == WHITE).count();
        let blue_text = (0..300u32)
            .flat_map(|x| (250..300u32).map(move |y| (x, y)))
            .filter(|&(x, y)| *img.get_pixel(x, y) == BLUE)
            .count();
        assert!(white > 100 && blue_text > 50, "{white} {blue_text}");
        // Too small for a legend: the picture is the image and its keypoints only.
        let small = keypoint_picture(&grey(40, 30, 100), &[]);
        assert!(small.pixels().all(|p| *p == Rgb([100; 3])));
    }

    #[test]
    fn picture_format_follows_the_extension() {
        assert_eq!(
            picture_format(Path::new("a.PNG")).unwrap(),
            ImageFormat::Png
        );
        assert_eq!(
            picture_format(Path::new("a.jpeg")).unwrap(),
            ImageFormat::Jpeg
        );
        assert_eq!(
            picture_format(Path::new("a.ppm")).unwrap(),
            ImageFormat::Pnm
        );
        for bad in ["a.gif", "a", "a.png.tmp"] {
            let e = picture_format(Path::new(bad)).unwrap_err().to_string();
            assert!(
                e.contains(bad) && e.contains(".png, .jpg/.jpeg or .ppm"),
                "{e}"
            );
        }
        let img = RgbImage::new(3, 2);
        let ppm = encode(&img, ImageFormat::Pnm, Path::new("x.ppm")).unwrap();
        assert!(ppm.starts_with(b"P6"));
    }
}
