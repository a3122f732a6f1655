//! Keypoints and matches drawn over images: the keypoint picture (the CLI's `detect --draw`
//! and the node's `debug_image`) and the side-by-side match picture (`match --draw`).

use image::{Rgb, RgbImage};
use surfcl_core::Keypoint;

use crate::canvas::{Canvas, circle, line, px};
use crate::colours::{BLUE, GREEN, RED, WHITE, YELLOW};
use crate::legend::{Legend, draw_legend};

/// Match lines drawn by default (crate docs).
pub const DEFAULT_MATCH_LINES: usize = 200;

/// A borrowed 8-bit grey image: `width * height` pixels, rows top to bottom.
#[derive(Debug, Clone, Copy)]
pub struct Gray<'a> {
    /// The pixels (missing ones are drawn black).
    pub pixels: &'a [u8],
    /// Width in pixels.
    pub width: usize,
    /// Height in pixels.
    pub height: usize,
}

/// The grey image as RGB (all three channels equal).
pub fn gray_to_rgb(gray: Gray<'_>) -> RgbImage {
    let side = |v: usize| u32::try_from(v).unwrap_or(u32::MAX);
    let mut out = RgbImage::new(side(gray.width), side(gray.height));
    for (dst, &v) in out.pixels_mut().zip(gray.pixels) {
        *dst = Rgb([v, v, v]);
    }
    out
}

/// Writes the grey pixels as rgb8 into `out`, reusing its allocation (the node's per-frame
/// buffer).
pub fn gray_into_rgb(gray: &[u8], out: &mut Vec<u8>) {
    out.clear();
    out.extend(gray.iter().flat_map(|&g| [g, g, g]));
}

/// The colour of a keypoint: red for bright blobs (`laplacian < 0`), blue for dark blobs
/// (`> 0`), green for Harris corners (`0`).
pub fn keypoint_colour(kp: &Keypoint) -> Rgb<u8> {
    match kp.laplacian {
        l if l < 0 => RED,
        0 => GREEN,
        _ => BLUE,
    }
}

/// The drawn radius of a keypoint: `round(2.5 * scale)`, at least 2 px, at most 1000 px.
pub fn keypoint_radius(kp: &Keypoint) -> i64 {
    px(2.5 * kp.scale).clamp(2, 1000)
}

/// Draws each keypoint as a circle with an orientation tick, offset by `dx` pixels (the right
/// image of a side-by-side picture).
pub fn draw_keypoints(canvas: &mut Canvas<'_>, keypoints: &[Keypoint], dx: i64) {
    for kp in keypoints {
        let colour = keypoint_colour(kp);
        let (cx, cy) = (px(kp.x) + dx, px(kp.y));
        let r = keypoint_radius(kp);
        circle(canvas, (cx, cy), r, colour);
        let r = r as f32;
        let tip = (
            cx + px(r * kp.orientation.cos()),
            cy + px(r * kp.orientation.sin()),
        );
        line(canvas, (cx, cy), tip, colour);
    }
}

/// The legend of a keypoint picture: the count, then one line per colour present.
pub fn keypoint_legend(keypoints: &[Keypoint]) -> Legend {
    let count = |f: fn(i8) -> bool| keypoints.iter().filter(|k| f(k.laplacian)).count();
    let (bright, dark, corners) = (count(|l| l < 0), count(|l| l > 0), count(|l| l == 0));
    let mut legend = Legend::new();
    let n = keypoints.len();
    legend.push(
        format_args!("{n} keypoints; circle radius 2.5 x scale, tick = orientation"),
        WHITE,
    );
    if bright + dark > 0 {
        legend.push(
            format_args!("red: {bright} bright blobs (laplacian -)"),
            RED,
        );
        legend.push(format_args!("blue: {dark} dark blobs (laplacian +)"), BLUE);
    }
    if corners > 0 {
        legend.push(format_args!("green: {corners} harris corners"), GREEN);
    }
    legend
}

/// Draws the keypoint picture on `canvas` (which holds the image): a yellow line for each of
/// `tracks` (from a keypoint to where its match lies in another frame), then the keypoints,
/// then the legend. Allocates nothing.
pub fn draw_keypoint_picture<I>(canvas: &mut Canvas<'_>, keypoints: &[Keypoint], tracks: I)
where
    I: IntoIterator<Item = ((f32, f32), (f32, f32))>,
{
    let mut matched = 0usize;
    for (from, to) in tracks {
        line(
            canvas,
            (px(from.0), px(from.1)),
            (px(to.0), px(to.1)),
            YELLOW,
        );
        matched += 1;
    }
    draw_keypoints(canvas, keypoints, 0);
    let mut legend = keypoint_legend(keypoints);
    if matched > 0 {
        legend.push(
            format_args!("yellow: {matched} matches, line to the previous frame"),
            YELLOW,
        );
    }
    draw_legend(canvas, &legend);
}

/// The image with its keypoints drawn on it, and a legend (crate docs).
pub fn keypoint_picture(gray: Gray<'_>, keypoints: &[Keypoint]) -> RgbImage {
    let mut img = gray_to_rgb(gray);
    draw_keypoint_picture(&mut Canvas::from_image(&mut img), keypoints, []);
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

/// The legend of a match picture: how many lines are shown, then the colours' counts.
fn match_legend(matches: &[MatchLine], shown: usize) -> Legend {
    let mut legend = Legend::new();
    let n = matches.len();
    if shown < n {
        legend.push(
            format_args!("shown {shown} of {n} matches (evenly chosen; --draw-all draws all)"),
            WHITE,
        );
    } else {
        legend.push(format_args!("{n} matches, all shown"), WHITE);
    }
    let correct = matches.iter().filter(|m| m.correct == Some(true)).count();
    let wrong = matches.iter().filter(|m| m.correct == Some(false)).count();
    if correct + wrong > 0 {
        legend.push(
            format_args!("green: {correct} correct by the homography (within 3 px)"),
            GREEN,
        );
        legend.push(format_args!("red: {wrong} wrong"), RED);
    } else {
        legend.push(
            format_args!("yellow: no ground truth (--homography FILE colours them)"),
            YELLOW,
        );
    }
    legend
}

/// The two images side by side (first left, second right, tops aligned, black padding, a white
/// bar between them) with at most `limit` of the matches (see [`evenly_chosen`]) as small circles
/// joined by a line, and a legend with the counts (crate docs).
pub fn match_picture(
    left: Gray<'_>,
    right: Gray<'_>,
    matches: &[MatchLine],
    limit: usize,
) -> RgbImage {
    let side = |v: usize| u32::try_from(v).unwrap_or(u32::MAX);
    let (width, height) = (
        side(left.width.saturating_add(right.width)),
        side(left.height.max(right.height)),
    );
    let mut img = RgbImage::new(width, height);
    let (l, r) = (gray_to_rgb(left), gray_to_rgb(right));
    image::imageops::replace(&mut img, &l, 0, 0);
    image::imageops::replace(&mut img, &r, i64::from(l.width()), 0);
    let dx = i64::from(l.width());
    let mut canvas = Canvas::from_image(&mut img);
    // The bar covers the first columns of the right image (the picture keeps its size).
    let bar = if left.width >= 64 && right.width >= 64 {
        3
    } else {
        1
    };
    for x in dx..dx + bar {
        line(&mut canvas, (x, 0), (x, i64::from(height) - 1), WHITE);
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
        circle(&mut canvas, a, 3, colour);
        circle(&mut canvas, b, 3, colour);
        line(&mut canvas, a, b, colour);
    }
    draw_legend(&mut canvas, &match_legend(matches, shown.len()));
    img
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grey(width: usize, height: usize, v: u8, pixels: &mut Vec<u8>) -> Gray<'_> {
        *pixels = vec![v; width * height];
        Gray {
            pixels,
            width,
            height,
        }
    }

    fn kp(x: f32, y: f32, laplacian: i8) -> Keypoint {
        Keypoint {
            x,
            y,
            scale: 2.0,
            laplacian,
            ..Keypoint::default()
        }
    }

    #[test]
    fn keypoint_colours_follow_the_laplacian() {
        assert_eq!(keypoint_colour(&kp(10.0, 10.0, -1)), RED);
        assert_eq!(keypoint_colour(&kp(10.0, 10.0, 1)), BLUE);
        assert_eq!(keypoint_colour(&kp(10.0, 10.0, 0)), GREEN);
        let mut buf = Vec::new();
        let img = keypoint_picture(grey(21, 21, 0, &mut buf), &[kp(10.0, 10.0, 1)]);
        // Radius 5 circle plus the tick towards +x: (15, 10) is on both.
        assert_eq!(*img.get_pixel(15, 10), BLUE);
        assert_eq!(*img.get_pixel(12, 10), BLUE);
        assert_eq!(*img.get_pixel(10, 12), Rgb([0, 0, 0]));
    }

    #[test]
    fn dark_blobs_are_blue_and_bright_blobs_red_as_documented() {
        // The values the crate docs give: red (255, 40, 40), blue (40, 120, 255), green
        // (40, 220, 40).
        let mut buf = Vec::new();
        let kps = [kp(10.0, 10.0, -1), kp(40.0, 10.0, 1), kp(70.0, 10.0, 0)];
        let img = keypoint_picture(grey(90, 30, 128, &mut buf), &kps);
        // The rightmost point of each circle (radius 5) and its tick.
        assert_eq!(img.get_pixel(15, 10).0, [255, 40, 40], "bright blob");
        assert_eq!(img.get_pixel(45, 10).0, [40, 120, 255], "dark blob");
        assert_eq!(img.get_pixel(75, 10).0, [40, 220, 40], "harris corner");
        // The legend says the same, in the same colours.
        let legend: Vec<_> = keypoint_legend(&kps)
            .lines()
            .map(|(t, c)| (t.to_string(), c))
            .collect();
        assert!(legend.contains(&("red: 1 bright blobs (laplacian -)".into(), RED)));
        assert!(legend.contains(&("blue: 1 dark blobs (laplacian +)".into(), BLUE)));
        assert!(legend.contains(&("green: 1 harris corners".into(), GREEN)));
    }

    #[test]
    fn match_picture_is_side_by_side() {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        let img = match_picture(
            grey(10, 8, 100, &mut a),
            grey(6, 12, 200, &mut b),
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

    #[test]
    fn match_picture_draws_only_the_chosen_lines_with_bar_and_legend() {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        let (left, right) = (grey(400, 300, 128, &mut a), grey(400, 300, 128, &mut b));
        // One horizontal match per row: line k at y = k.
        let lines: Vec<MatchLine> = (0..300)
            .map(|k| MatchLine {
                from: (20.0, k as f32),
                to: (380.0, k as f32),
                correct: Some(k % 2 == 0),
                distance: 0.1,
            })
            .collect();
        let img = match_picture(left, right, &lines, 10);
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
        let all = match_picture(left, right, &lines, usize::MAX);
        let rows = (0..200u32)
            .filter(|&y| *all.get_pixel(200, y) != Rgb([128; 3]))
            .count();
        assert_eq!(rows, 200, "--draw-all draws every line");
    }

    #[test]
    fn keypoint_picture_has_a_legend_when_it_fits() {
        let mut buf = Vec::new();
        let img = keypoint_picture(grey(400, 300, 100, &mut buf), &[kp(50.0, 50.0, 1)]);
        let white = img.pixels().filter(|p| **p == WHITE).count();
        let blue_text = (0..300u32)
            .flat_map(|x| (250..300u32).map(move |y| (x, y)))
            .filter(|&(x, y)| *img.get_pixel(x, y) == BLUE)
            .count();
        assert!(white > 100 && blue_text > 50, "{white} {blue_text}");
        // Too small for a legend: the picture is the image and its keypoints only.
        let small = keypoint_picture(grey(40, 30, 100, &mut buf), &[]);
        assert!(small.pixels().all(|p| *p == Rgb([100; 3])));
    }

    #[test]
    fn tracks_are_yellow_lines_with_a_legend_line() {
        let mut buf = Vec::new();
        let gray = grey(400, 300, 100, &mut buf);
        let mut rgb = Vec::new();
        gray_into_rgb(gray.pixels, &mut rgb);
        let kps = [kp(50.0, 50.0, 1)];
        let mut canvas = Canvas::new(&mut rgb, 400, 300);
        draw_keypoint_picture(&mut canvas, &kps, [((50.0, 50.0), (150.0, 50.0))]);
        assert_eq!(canvas.pixel(100, 50), Some(YELLOW));
        let yellow_text = (0..300)
            .flat_map(|x| (200..300).map(move |y| (x, y)))
            .filter(|&(x, y)| canvas.pixel(x, y) == Some(YELLOW))
            .count();
        assert!(yellow_text > 50, "{yellow_text}");
    }
}
