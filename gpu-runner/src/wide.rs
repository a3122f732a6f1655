//! Wider vector instructions for the CPU backend's hot loops, chosen at run time.
//!
//! `surfcl-core` is built for the target's baseline (SSE2 on x86-64, so that one binary runs on
//! every x86-64 CPU; NEON is already the baseline on aarch64). Its loops are written to
//! vectorise, and with AVX2 they run 8 lanes wide instead of 4. Here, and only here, the std
//! layer asks the CPU whether it has AVX2 and then runs:
//! - description, its Haar maps and the Q7 matcher: the core's loops inlined
//!   (`describe_all_with_maps_inlined`, `haar_map::fill_rows_inlined`, `match_range_q7_inlined`) into `#[target_feature(enable = "avx2")]` functions
//!   (`widest!`): orientation and Q7 matching take about half the time;
//! - the `f32` matcher: the core's portable loop with only its 16-lane kernel compiled for AVX2,
//!   or for AVX-512 where the CPU has it (one register per descriptor chunk), out of line
//!   ([`Avx2LaneSums`], [`Avx512LaneSums`]). Inlined into the loop, LLVM splits that kernel into narrow
//!   vectors and it gets slower, with AVX2 too (the portable build keeps it out of line for the
//!   same reason); the Q7 kernel, by contrast, is a third slower out of line than inlined.
//!
//! The results are identical to the portable build, bit for bit (same IEEE operations per
//! element, no FMA contraction; Q7 distances are exact integers):
//! `gpu-runner/tests/cpu_wide.rs` checks that on real images through the CPU backend.

use std::ops::Range;

use surfcl_core::describe::{DescribeError, describe_all_with_maps};
use surfcl_core::haar_map::{self, HaarCell, HaarMap, HaarMapError};
use surfcl_core::matcher::{
    Match, MatchConfig, MatchError, PortableLaneSums, TrainBest, match_range_f32_with,
};
use surfcl_core::surf;
use surfcl_core::{Descriptor, DescriptorQ7, IntegralImage, Keypoint};

use crate::cpu::RangeMatcher;

/// Defines `$name`, which runs `$inlined` (a core function that inlines its loops into the
/// caller) compiled with AVX2 when the CPU has it, and `$portable` otherwise.
macro_rules! widest {
    ($(#[$doc:meta])* $name:ident = $portable:path, $inlined:path;
     fn($($arg:ident: $ty:ty),*) -> $ret:ty) => {
        $(#[$doc])*
        #[allow(clippy::too_many_arguments)]
        pub(crate) fn $name($($arg: $ty),*) -> $ret {
            /// The core's loops compiled with AVX2.
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2")]
            #[allow(clippy::too_many_arguments)]
            fn avx2($($arg: $ty),*) -> $ret {
                $inlined($($arg),*)
            }
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: `avx2` needs nothing but AVX2, which the CPU was just found to have
                // (std caches the detection after the first call).
                #[allow(unsafe_code)]
                return unsafe { avx2($($arg),*) };
            }
            $portable($($arg),*)
        }
    };
}

widest! {
    /// [`describe_all_with_maps`], with AVX2 where the CPU has it (x86-64), else the portable
    /// build.
    describe_all_widest = describe_all_with_maps,
        surfcl_core::describe::describe_all_with_maps_inlined;
    fn(ii: &IntegralImage<'_>, keypoints: &mut [Keypoint], upright: bool, out: &mut [Descriptor],
       maps: &[HaarMap<'_>]) -> Result<(), DescribeError>
}

widest! {
    /// [`haar_map::fill_rows`], with AVX2 where the CPU has it.
    fill_haar_map_rows_widest = haar_map::fill_rows, haar_map::fill_rows_inlined;
    fn(ii: &IntegralImage<'_>, half: usize, rows: Range<usize>, cells: &mut [HaarCell])
        -> Result<(), HaarMapError>
}

widest! {
    /// [`surf::fill_octave_rows_with_columns_from`], with AVX2 where the CPU has it (its box
    /// sums out of line: [`Avx2BoxSums`]).
    fill_octave_rows_widest = surf::fill_octave_rows_with_columns_from,
        surf::fill_octave_rows_with_columns_inlined::<Avx2BoxSums>;
    fn(ii: &IntegralImage<'_>, config: &surf::SurfConfig, octave: u32, rows: Range<usize>,
       out: &mut [u32], columns: &mut [u32], from_interval: u32) -> Result<(), surf::SurfError>
}

/// The core's box sums compiled with AVX2, out of line (inlined into the fill, LLVM cannot tell
/// that the column sums and the box rows do not overlap and keeps the loop scalar). Private to
/// this module, whose only use of it is behind the AVX2 detection of
/// [`fill_octave_rows_widest`]: that is what makes its safe `box_sums` sound.
#[cfg(target_arch = "x86_64")]
struct Avx2BoxSums;

#[cfg(target_arch = "x86_64")]
impl surf::BoxSums for Avx2BoxSums {
    #[inline(always)]
    fn box_sums<const STEP: usize>(v: &[u32], lo: usize, hi: usize, out: &mut [u32]) {
        #[target_feature(enable = "avx2")]
        #[inline(never)]
        fn avx2<const STEP: usize>(v: &[u32], lo: usize, hi: usize, out: &mut [u32]) {
            surf::box_sums_body::<STEP>(v, lo, hi, out);
        }
        // SAFETY: `Avx2BoxSums` is used only after the CPU was found to have AVX2 (above).
        #[allow(unsafe_code)]
        unsafe {
            avx2::<STEP>(v, lo, hi, out);
        }
    }
}

widest! {
    /// `surfcl_core::matcher::match_range_q7`, with AVX2 where the CPU has it.
    match_range_q7_widest = surfcl_core::matcher::match_range_q7,
        surfcl_core::matcher::match_range_q7_inlined;
    fn(query_keypoints: &[Keypoint], query_descriptors: &[DescriptorQ7], queries: Range<usize>,
       train_keypoints: &[Keypoint], train_descriptors: &[DescriptorQ7], config: &MatchConfig,
       best: &mut [TrainBest], out: &mut [Match]) -> Result<usize, MatchError>
}

/// `surfcl_core::matcher::match_range_f32`, with its kernel compiled for AVX-512 or AVX2 where
/// the CPU has them (the detection runs once per call of this function, not per query range).
pub(crate) fn match_range_f32_widest() -> RangeMatcher<Descriptor> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") {
        return match_range_f32_with::<Avx512LaneSums>;
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        return match_range_f32_with::<Avx2LaneSums>;
    }
    match_range_f32_with::<PortableLaneSums>
}

/// The core's `f32` lane sums compiled with AVX-512: its 16 lanes are one register, so a pair of
/// descriptors costs four subtractions, multiplications and additions (AVX2: eight each). On the
/// Xeon development host the matcher got 10-18% faster with it
/// (docs/BENCHMARKS.md); the rest of the backend's loops stay AVX2, which was faster there.
/// Same IEEE operations per lane as the portable kernel, so the same bits. Private to this
/// module, used only behind the AVX-512 detection of [`match_range_f32_widest`].
#[cfg(target_arch = "x86_64")]
struct Avx512LaneSums;

#[cfg(target_arch = "x86_64")]
impl surfcl_core::matcher::LaneSums for Avx512LaneSums {
    #[inline(always)]
    fn lane_sums(a: &Descriptor, b: &Descriptor) -> [f32; 16] {
        /// Out of line on purpose (see the module docs).
        #[target_feature(enable = "avx512f")]
        #[inline(never)]
        fn avx512(a: &Descriptor, b: &Descriptor) -> [f32; 16] {
            surfcl_core::matcher::lane_sums_f32_body(a, b)
        }
        // SAFETY: `Avx512LaneSums` is used only after the CPU was found to have AVX-512F
        // (above).
        #[allow(unsafe_code)]
        unsafe {
            avx512(a, b)
        }
    }
}

/// The core's `f32` lane sums compiled with AVX2. Private to this module, whose only use of it
/// is behind the AVX2 detection of [`match_range_f32_widest`]: that is what makes its safe
/// `lane_sums` sound.
#[cfg(target_arch = "x86_64")]
struct Avx2LaneSums;

#[cfg(target_arch = "x86_64")]
impl surfcl_core::matcher::LaneSums for Avx2LaneSums {
    #[inline(always)]
    fn lane_sums(a: &Descriptor, b: &Descriptor) -> [f32; 16] {
        /// Out of line on purpose (see the module docs).
        #[target_feature(enable = "avx2")]
        #[inline(never)]
        fn avx2(a: &Descriptor, b: &Descriptor) -> [f32; 16] {
            surfcl_core::matcher::lane_sums_f32_body(a, b)
        }
        // SAFETY: `Avx2LaneSums` is used only after the CPU was found to have AVX2 (above).
        #[allow(unsafe_code)]
        unsafe {
            avx2(a, b)
        }
    }
}
