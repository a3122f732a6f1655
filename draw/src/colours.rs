//! The colours of every surfcl picture (see the crate docs for what each one means).

use image::Rgb;

/// Red: bright blob (negative Laplacian) / wrong match.
pub const RED: Rgb<u8> = Rgb([255, 40, 40]);
/// Blue: dark blob (positive Laplacian).
pub const BLUE: Rgb<u8> = Rgb([40, 120, 255]);
/// Green: Harris corner / correct match.
pub const GREEN: Rgb<u8> = Rgb([40, 220, 40]);
/// Yellow: match without ground truth (the node: a keypoint's match in the previous frame).
pub const YELLOW: Rgb<u8> = Rgb([255, 220, 0]);
/// White: legend text and the bar between the two images of a match picture.
pub const WHITE: Rgb<u8> = Rgb([255, 255, 255]);
