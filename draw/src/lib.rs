//! The pictures of surfcl, one module for all of them: the `surfcl` CLI's `--draw` pictures and
//! the ROS 2 node's `debug_image` draw with the same code, so the same keypoints on the same
//! image give the same pixels. Lines, circles and the legend's bitmap font are
//! `embedded-graphics` primitives drawn on a borrowed rgb8 buffer ([`Canvas`], clipped to the
//! picture: nothing indexes out of bounds, and the node's per-frame path allocates nothing).
//!
//! # Colours and legend
//!
//! | colour | RGB | keypoint picture | match picture |
//! | --- | --- | --- | --- |
//! | red | (255, 40, 40) | bright blob on a dark ground (`laplacian == -1`) | wrong match (by the homography) |
//! | blue | (40, 120, 255) | dark blob on a bright ground (`laplacian == +1`) | |
//! | green | (40, 220, 40) | Harris corner (`laplacian == 0`) | correct match (within 3 px) |
//! | yellow | (255, 220, 0) | the node: line from a keypoint to its match in the previous frame | match without ground truth |
//! | white | (255, 255, 255) | legend's first line | legend's first line, bar between the images |
//!
//! - A keypoint is a circle of radius `round(2.5 * scale)` (at least 2 px): SURF's `scale` is
//!   the Gaussian sigma of the blob (`1.2 / 9 *` filter size) and 2.5 sigma is about the blob's
//!   visible edge; OpenSURF draws the same radius. Harris points carry their fixed descriptor
//!   scale. A tick goes from the centre to the circle at the keypoint's orientation (pointing
//!   right for upright keypoints, whose orientation is 0).
//! - Matches: a line from the point in the left image to the point in the right one, each end a
//!   circle of radius 3. At most [`DEFAULT_MATCH_LINES`] matches are drawn unless the caller asks
//!   for all (`--draw-all`): evenly spaced in query order, so the same every run and with the
//!   share of correct lines of the whole set.
//! - The legend, in the bottom-left corner on a band darkened to a quarter, in the colours above:
//!   the count of keypoints (or matches), then one line per colour with its count. Its font is
//!   `embedded-graphics`' 6x9 bitmap font, enlarged 2x or 3x where the picture is large enough;
//!   it is left out when the picture is too small to hold it.

#![deny(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod canvas;
pub mod colours;
pub mod legend;
pub mod overlay;

pub use canvas::{Canvas, circle, line};
pub use colours::{BLUE, GREEN, RED, WHITE, YELLOW};
pub use legend::{Legend, draw_legend};
pub use overlay::{
    DEFAULT_MATCH_LINES, Gray, MatchLine, draw_keypoint_picture, draw_keypoints, evenly_chosen,
    gray_into_rgb, gray_to_rgb, keypoint_colour, keypoint_legend, keypoint_picture,
    keypoint_radius, match_picture,
};
