//! Banded detection and description: rows in, keypoints and descriptors out, for a frame that
//! does not fit in RAM as an integral image (a QVGA frame's takes 309 KB; a microcontroller with
//! 256 KB holds about a third of it).
//!
//! ## How
//! The rows arrive one at a time (as a camera's DMA delivers them) and go straight into a band
//! of `band_rows` rows of the frame's own `u32` integral image: table row `k` holds the integral
//! of frame row boundary `top + k`. Box sums are differences of two table rows, so they are the
//! frame's, exact, whichever row the band starts at (the columns' common offset cancels, and the
//! sums wrap as the full table's do). When the band is full its oldest `advance` rows are
//! dropped (moved out; `top` stays a multiple of the largest sample step, so the octaves' sample
//! grids stay the frame's).
//!
//! Every `advance` rows, each octave's grid rows whose filters (and those of the rows above and
//! below, for the 3x3x3 neighbourhood) lie inside the band are filled with the full-frame fill
//! ([`fill_f32_bits`](crate::surf) or the fixed-point fill) and scanned with the full-frame scan,
//! so the keypoints are the full-frame path's, bit for bit ([`BandArithmetic::to_frame`]). A
//! keypoint is described as soon as the rows its orientation and descriptor windows reach
//! ([`descriptor_reach`]) are in the band, or, when the band cannot hold them all, with the
//! window clipped to at least [`clipped_reach`] rows above and below it (as boxes are clipped at
//! the frame's border): docs/ARCHITECTURE.md, "The banded path", says which keypoints that is.
//!
//! Every buffer is the caller's, sized by the `const fn`s of this module for a width and an
//! octave count: [`band_table_len`], [`band_maps_len`], [`band_rows_for`].
//!
//! ```
//! use surfcl_core::banded::{self, BandBuffers, BandedSurf};
//! use surfcl_core::surf::{Float, SurfConfig};
//! use surfcl_core::{DescriptorQ7, Keypoint};
//!
//! let (w, h) = (96, 80);
//! let config = SurfConfig { octaves: 2, ..SurfConfig::default() };
//! let advance = 8;
//! let rows = banded::band_rows_for(config.octaves, config.init_sample_step, advance);
//! let mut table = vec![0u32; banded::band_table_len(w, rows)];
//! let mut maps = vec![0u32; banded::band_maps_len(w, config.octaves, config.init_sample_step, advance)];
//! let mut keypoints = vec![Keypoint::ZERO; 64];
//! let mut descriptors = vec![[0i8; 64]; 64];
//! let buffers = BandBuffers { table: &mut table, maps: &mut maps, keypoints: &mut keypoints,
//!     descriptors: &mut descriptors };
//! let mut surf = BandedSurf::<Float, DescriptorQ7>::new(&config, w, h, rows, advance, buffers,
//!     banded::describe_f32_q7).unwrap();
//! for y in 0..h {
//!     let row: Vec<u8> = (0..w).map(|x| if (x / 12 + y / 12) % 2 == 0 { 200 } else { 40 }).collect();
//!     surf.push_row(&row).unwrap();
//! }
//! assert!(surf.is_complete());
//! assert_eq!(surf.keypoints().len(), surf.descriptors().len());
//! ```

mod arith;
mod driver;
mod error;
mod geometry;
mod store;

pub use arith::{BandArithmetic, RowFill, describe_f32, describe_f32_q7, describe_fixed_q7};
pub use driver::{BandBuffers, BandedSurf};
pub use error::BandError;
pub use geometry::{
    band_maps_len, band_rows_for, band_table_len, clipped_reach, descriptor_reach,
    detection_margin, detection_rows, octave_reach,
};
pub use store::BandedKeypoints;

#[cfg(test)]
mod tests;
