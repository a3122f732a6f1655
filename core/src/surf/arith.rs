//! The arithmetic of a detection, chosen by a type parameter of
//! [`detect_with`](super::detect_with): [`Float`] (the `f32` reference shared with the OpenCL
//! kernels) or [`FixedPoint`] (integers only, for parts without an FPU). Both run the same
//! driver: one octave's four response maps at a time, the 3x3x3 non-maximum suppression over
//! intervals 1 and 2, the decision on each candidate, the strongest-N sink. Only the responses
//! and the decision differ.

use super::config::SurfConfig;
use super::decide::{Refinement, SampleSite, laplacian_at, refine_candidate};
use super::fixed::{FixedCube, fill_fixed, fixed_threshold, refine_fixed};
use super::response::{PortableBoxSums, fill_f32_bits};
use crate::fixed::arith::Response;
use crate::integral::IntegralImage;

mod sealed {
    pub trait Sealed {}
}

/// The arithmetic of a detection: how one octave's response maps are computed and stored (four
/// `u32` words per sample, grid-major), and how a candidate's neighbourhood is decided. Sealed:
/// implemented by [`Float`] and [`FixedPoint`].
pub trait Arithmetic: sealed::Sealed {
    /// A response as stored in a map word.
    type Value: Copy + PartialOrd + Default;
    /// Fills `maps` (4 words per sample of `octave`'s grid).
    fn fill(ii: &IntegralImage, config: &SurfConfig, octave: u32, maps: &mut [u32]);
    /// The response stored in `word`.
    fn value(word: u32) -> Self::Value;
    /// The threshold in this arithmetic.
    fn threshold(config: &SurfConfig) -> Self::Value;
    /// `v >= threshold` (false for NaN).
    fn reaches(v: Self::Value, threshold: Self::Value) -> bool;
    /// The full decision on a strict local maximum's neighbourhood.
    fn decide(
        ii: &IntegralImage,
        config: &SurfConfig,
        threshold: Self::Value,
        site: SampleSite,
        cube: &[[[Self::Value; 3]; 3]; 3],
    ) -> Refinement;
}

/// `f32` responses, bit-exact with the OpenCL kernels (`docs/ARCHITECTURE.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Float;

/// Fixed-point responses (Q29) and an integer Newton step: no floating-point operation at all
/// (`crate::fixed`). Keypoints within a fraction of a pixel of [`Float`]'s.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FixedPoint;

impl sealed::Sealed for Float {}
impl sealed::Sealed for FixedPoint {}

impl Arithmetic for Float {
    type Value = f32;
    fn fill(ii: &IntegralImage, config: &SurfConfig, octave: u32, maps: &mut [u32]) {
        fill_f32_bits::<PortableBoxSums>(ii, config, octave, 0..usize::MAX, None, maps, 0);
    }
    #[inline(always)]
    fn value(word: u32) -> f32 {
        f32::from_bits(word)
    }
    fn threshold(config: &SurfConfig) -> f32 {
        config.threshold
    }
    #[inline(always)]
    fn reaches(v: f32, threshold: f32) -> bool {
        matches!(
            v.partial_cmp(&threshold),
            Some(core::cmp::Ordering::Greater | core::cmp::Ordering::Equal)
        )
    }
    fn decide(
        ii: &IntegralImage,
        config: &SurfConfig,
        _threshold: f32,
        site: SampleSite,
        cube: &[[[f32; 3]; 3]; 3],
    ) -> Refinement {
        refine_candidate(config, site, cube, laplacian_at(ii, config, site))
    }
}

impl Arithmetic for FixedPoint {
    type Value = Response;
    fn fill(ii: &IntegralImage, config: &SurfConfig, octave: u32, maps: &mut [u32]) {
        fill_fixed(ii, config, octave, 0..usize::MAX, maps);
    }
    #[inline(always)]
    fn value(word: u32) -> Response {
        Response::from_bits(word as i32)
    }
    fn threshold(config: &SurfConfig) -> Response {
        fixed_threshold(config)
    }
    #[inline(always)]
    fn reaches(v: Response, threshold: Response) -> bool {
        v >= threshold
    }
    fn decide(
        ii: &IntegralImage,
        config: &SurfConfig,
        threshold: Response,
        site: SampleSite,
        cube: &FixedCube,
    ) -> Refinement {
        refine_fixed(
            config,
            threshold,
            site,
            cube,
            laplacian_at(ii, config, site),
        )
    }
}
