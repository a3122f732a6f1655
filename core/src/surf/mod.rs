//! The Fast-Hessian (SURF) detector: box-filter Hessian responses, 3x3x3 non-maximum suppression
//! and Brown-Lowe sub-pixel/scale interpolation, in `f32` or with 8-bit packed response maps.
//!
//! ## Theory
//! SURF (Bay et al. 2006/2008) approximates the scale-normalised determinant of the Hessian with
//! box filters evaluated on an integral image, so every response costs the same whatever the scale.
//! Octave `o` has four filters `L(o, i) = 3 ((i + 1) 2^(o+1) + 1)` (9, 15, 21, 27; 15, 27, 39, 51;
//! ...), sampled every `step(o) = init_sample_step * 2^o` pixels. The response is
//! `Dxx Dyy - (0.9 Dxy)^2` normalised by the filter area (computed exactly in integers, then rounded
//! once, so the OpenCL kernels reproduce it bit for bit), a point is kept where it exceeds the
//! threshold and its 26 neighbours in position and scale, and its position and scale are refined
//! by one Newton step on the 3x3x3 neighbourhood. The exact definitions, shared with the kernels,
//! are in `docs/ARCHITECTURE.md`.
//!
//! The packed mode stores the four interval responses of a sample as four bytes of one `u32`
//! (log-companded codes with the Laplacian sign in bit 7), screens candidates on those bytes, and
//! recomputes each candidate's neighbourhood exactly: it finds the same keypoints as the `f32` mode
//! with a quarter of the response memory.
//!
//! ## Scale
//! [`Keypoint::scale`](crate::Keypoint::scale) is `0.1333 L` (OpenSURF), the sigma of the Gaussian whose second
//! derivatives the filter approximates (`1.2 / 9 L`). A Gaussian blob of standard deviation `s`
//! is found at `scale ~= 0.75 s` (0.70 to 0.81 for `s` from 2.5 to 10, measured on synthetic blobs
//! in the tests), not at `s` as the continuous scale-normalised determinant would give: the box
//! filters' lobes and area normalisation shift the peak.
//!
//! ## Usage
//! ```
//! use surfcl_core::{GrayImage, IntegralImage, KeypointSet, KeypointSink};
//! use surfcl_core::integral::integral_len;
//! use surfcl_core::surf::{self, SurfConfig};
//!
//! // A dark image with one bright Gaussian blob (sigma 4) at (40, 30).
//! let (w, h) = (80, 64);
//! let pixels: Vec<u8> = (0..w * h)
//!     .map(|i| {
//!         let (x, y) = ((i % w) as f32 - 40.0, (i / w) as f32 - 30.0);
//!         (20.0 + 200.0 * (-(x * x + y * y) / 32.0).exp()) as u8
//!     })
//!     .collect();
//! let image = GrayImage::new(&pixels, w, h).unwrap();
//! let mut table = vec![0u32; integral_len(w, h).unwrap()];
//! let ii = IntegralImage::compute(&image, &mut table).unwrap();
//!
//! let config = SurfConfig::default();
//! config.validate().unwrap();
//! let mut scratch = vec![0u32; surf::scratch_len(&config, w, h).unwrap()];
//! let mut keypoints = KeypointSet::<64>::new();
//! let stats = surf::detect(&ii, &config, &mut scratch, &mut keypoints).unwrap();
//! assert!(stats.kept >= 1); // a blob between two octaves can be found in both
//! let kp = keypoints.as_slice()[0];
//! assert!((kp.x - 40.0).abs() < 0.5 && (kp.y - 30.0).abs() < 0.5);
//! assert_eq!(kp.laplacian, -1); // bright blob
//! ```

mod arith;
mod config;
mod decide;
mod detect;
mod fill;
mod fixed;
mod geometry;
mod packed;
mod response;
mod scan;

pub use arith::{Arithmetic, FixedPoint, Float};
pub use config::{INTERVALS, MAX_OCTAVES, Precision, SurfConfig, SurfError};
pub use decide::{
    DetectStats, Refinement, ResponseCube, SampleSite, exact_cube, nms_border, refine_candidate,
    refine_exact,
};
pub use detect::{
    Serial, Strategy, detect, detect_with, detect_with_strategy, fill_and_scan_in_bands,
    scratch_len_with,
};
pub use fill::{OctaveFill, OctaveMaps};
pub use geometry::{filter_size, grid_size, sample_step, scratch_capacity, scratch_len};
pub use packed::{PackedCodeTable, PackedResponses, pack_byte, unpack_byte};
pub use response::{
    BoxSums, InlineBoxSums, PortableBoxSums, RESPONSE_NORMS, column_scratch_len,
    compute_octave_f32, compute_octave_packed, response_at, response_norm,
};
// The row-level pieces that the banded path (`crate::banded`) drives over a band of rows.
pub(crate) use fixed::fill_fixed;
pub(crate) use response::fill_f32_bits;
pub(crate) use scan::{MapRows, scan_interval_rows};

#[cfg(test)]
pub(crate) mod test_util;
#[cfg(test)]
mod tests;
