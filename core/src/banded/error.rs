//! The banded path's error type.

use core::fmt;

use crate::image::ImageError;
use crate::surf::SurfError;

/// Why the banded path rejected a row, a buffer or a configuration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BandError {
    /// The configuration or the frame size is invalid.
    Surf(SurfError),
    /// A row of the wrong length.
    RowLength {
        /// The frame's width.
        expected: usize,
        /// The row's length.
        actual: usize,
    },
    /// A row pushed after the frame's last.
    TooManyRows {
        /// The frame's height.
        height: usize,
    },
    /// A buffer shorter than the frame needs (a frame wider than the buffers were sized for,
    /// or fewer band rows, maps or descriptors than the configuration needs).
    Buffer {
        /// Which buffer.
        name: &'static str,
        /// The length needed.
        expected: usize,
        /// The length given.
        actual: usize,
    },
    /// The band is shorter than detection needs ([`detection_rows`](super::detection_rows)) or `advance` is not a
    /// positive multiple of the largest sample step.
    Geometry {
        /// The band rows given.
        band_rows: usize,
        /// The advance given.
        advance: usize,
    },
    /// A keypoint's row is not in the band: no kept row covers its descriptor window.
    WindowNotCovered {
        /// The keypoint's row (rounded).
        row: usize,
        /// The frame rows the band holds.
        held: (usize, usize),
    },
}

impl fmt::Display for BandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BandError::Surf(e) => write!(f, "{e}"),
            BandError::RowLength { expected, actual } => {
                write!(f, "row of {actual} pixels, the frame is {expected} wide")
            }
            BandError::TooManyRows { height } => {
                write!(f, "row pushed after the frame's {height} rows")
            }
            BandError::Buffer {
                name,
                expected,
                actual,
            } => write!(f, "{name} buffer has {actual} entries, {expected} needed"),
            BandError::Geometry { band_rows, advance } => write!(
                f,
                "a band of {band_rows} rows advancing by {advance} cannot hold the filters"
            ),
            BandError::WindowNotCovered { row, held } => write!(
                f,
                "keypoint row {row} is outside the rows {}..{} held",
                held.0, held.1
            ),
        }
    }
}

impl core::error::Error for BandError {}

impl From<SurfError> for BandError {
    fn from(e: SurfError) -> Self {
        BandError::Surf(e)
    }
}

impl From<ImageError> for BandError {
    fn from(e: ImageError) -> Self {
        BandError::Surf(SurfError::Image(e))
    }
}
