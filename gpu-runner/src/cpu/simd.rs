//! The CPU backend's hot loops compiled for the widest vector instructions the CPU has, chosen
//! once when the backend is made ([`Kernels::for_this_cpu`], as rustfft's planner picks its
//! algorithms once).
//!
//! `surfcl-core` is built for the target's baseline (SSE2 on x86-64, so that one binary runs on
//! every x86-64 CPU; NEON is already the baseline on aarch64). Its loops are written to
//! vectorise, and with AVX2 they run 8 lanes wide instead of 4. Where the CPU has AVX2:
//! - the Hessian fill (`OctaveFill::fill_rows`), description (`describe_all_with_maps`), its Haar
//!   maps (`haar_map::fill_rows`) and the Q7 matcher (`match_range_q7_with` with the inlined
//!   kernel): the core's loops, which inline into their caller, called from functions with
//!   `#[target_feature(enable = "avx2")]`; the fill's box sums out of line ([`Avx2BoxSums`]):
//!   orientation and Q7 matching take about half the time;
//! - the `f32` matcher: the core's portable loop with only its 16-lane kernel compiled for AVX2,
//!   or for AVX-512 where the CPU has it (one register per descriptor chunk), out of line
//!   ([`Avx2LaneSums`], [`Avx512LaneSums`]). Inlined into the loop, LLVM splits that kernel into
//!   narrow vectors and it gets slower, with AVX2 too (the portable build keeps it out of line
//!   for the same reason); the Q7 kernel, by contrast, is a third slower out of line than
//!   inlined.
//!
//! On aarch64 NEON is the baseline, so every one of these loops is a NEON loop without a
//! run-time choice ([`Kernels::neon`]: 4 lanes, as SSE2; the Q7 kernel inlined as with AVX2).
//!
//! The results are identical to the portable build, bit for bit (same IEEE operations per
//! element, no FMA contraction; Q7 distances are exact integers):
//! `gpu-runner/tests/cpu_wide.rs` checks that on real images through the CPU backend.

use std::ops::Range;

use surfcl_core::describe::{DescribeError, describe_all_with_maps};
use surfcl_core::haar_map::{self, HaarCell, HaarMap, HaarMapError};
use surfcl_core::matcher::{
    Match, MatchConfig, MatchError, PortableDistanceQ7, PortableLaneSums, TrainBest,
    match_range_f32_with, match_range_q7_with,
};
use surfcl_core::surf::{OctaveFill, PortableBoxSums, SurfError};
use surfcl_core::{Descriptor, DescriptorQ7, IntegralImage, Keypoint};

/// A range matcher: `match_range_f32` or `match_range_q7` with one kernel.
pub(crate) type RangeMatcher<D> = fn(
    &[Keypoint],
    &[D],
    Range<usize>,
    &[Keypoint],
    &[D],
    &MatchConfig,
    &mut [TrainBest],
    &mut [Match],
) -> Result<usize, MatchError>;

/// Fills grid rows of an octave's maps (`OctaveFill::fill_rows` with some box sums).
pub(crate) type FillRows =
    fn(&OctaveFill<'_>, Range<usize>, &mut [u32], &mut [u32]) -> Result<(), SurfError>;

/// Describes keypoints (`describe_all_with_maps`).
pub(crate) type DescribeAll = fn(
    &IntegralImage<'_>,
    &mut [Keypoint],
    bool,
    &mut [Descriptor],
    &[HaarMap<'_>],
) -> Result<(), DescribeError>;

/// Fills rows of a Haar map (`haar_map::fill_rows`).
pub(crate) type FillHaarRows =
    fn(&IntegralImage<'_>, usize, Range<usize>, &mut [HaarCell]) -> Result<(), HaarMapError>;

/// The backend's hot loops for one instruction set. Every set gives the same bits.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Kernels {
    /// The instruction set, for the backend's device description.
    pub name: &'static str,
    pub fill_rows: FillRows,
    pub describe_all: DescribeAll,
    pub fill_haar_rows: FillHaarRows,
    pub match_f32: RangeMatcher<Descriptor>,
    pub match_q7: RangeMatcher<DescriptorQ7>,
}

impl Default for Kernels {
    fn default() -> Self {
        Self::for_this_cpu()
    }
}

impl Kernels {
    /// The target's baseline build of every loop.
    pub fn portable() -> Self {
        Self {
            name: "portable",
            fill_rows: |fill, rows, out, columns| {
                fill.fill_rows::<PortableBoxSums>(rows, out, columns)
            },
            describe_all: describe_all_with_maps,
            fill_haar_rows: haar_map::fill_rows,
            match_f32: match_range_f32_with::<PortableLaneSums>,
            match_q7: match_range_q7_with::<PortableDistanceQ7>,
        }
    }

    /// The aarch64 kernels. NEON is the baseline there, so the portable loops are NEON loops
    /// already (the fill's column sums, box sums at steps 1, 2 and 4 with `ld2`/`ld4`, the
    /// determinants, description, both matcher kernels); what differs is where inlining pays.
    /// The Q7 matcher takes its kernel inlined, as the AVX2 one does: fewer instructions per
    /// pair. The `f32` lane sums and the box sums stay out of line: inlined, both cost more
    /// instructions on aarch64 too (counted under QEMU: `scripts/cross/insn-check.sh`).
    #[cfg(target_arch = "aarch64")]
    pub fn neon() -> Self {
        use surfcl_core::matcher::InlineDistanceQ7;
        Self {
            name: "NEON",
            match_q7: match_range_q7_with::<InlineDistanceQ7>,
            ..Self::portable()
        }
    }

    /// The widest loops this CPU runs: asks the CPU once (AVX2, AVX-512F on x86-64; NEON, the
    /// baseline, on aarch64).
    pub fn for_this_cpu() -> Self {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            let mut kernels = x86::avx2();
            if std::arch::is_x86_feature_detected!("avx512f") {
                kernels = x86::with_avx512_f32_matcher(kernels);
            }
            return kernels;
        }
        Self::baseline()
    }

    /// The kernels of the target's baseline instruction set: NEON on aarch64.
    #[cfg(target_arch = "aarch64")]
    fn baseline() -> Self {
        Self::neon()
    }

    /// The kernels of the target's baseline instruction set: the portable build.
    #[cfg(not(target_arch = "aarch64"))]
    fn baseline() -> Self {
        Self::portable()
    }
}

/// The x86-64 kernels. Every function here that runs AVX2 or AVX-512 code is reachable only
/// through [`Kernels::for_this_cpu`], after the CPU was found to have the extension: that is
/// what makes their safe signatures sound.
#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::ops::Range;

    use surfcl_core::describe::{DescribeError, describe_all_with_maps};
    use surfcl_core::haar_map::{self, HaarCell, HaarMap, HaarMapError};
    use surfcl_core::matcher::{
        InlineDistanceQ7, InlineLaneSums, LaneSums, Match, MatchConfig, MatchError, TrainBest,
        match_range_f32_with, match_range_q7_with,
    };
    use surfcl_core::surf::{BoxSums, InlineBoxSums, OctaveFill, SurfError};
    use surfcl_core::{Descriptor, DescriptorQ7, IntegralImage, Keypoint};

    use super::Kernels;

    /// Defines `$name`, a safe function that runs `$body` compiled with AVX2 (the core functions
    /// it calls inline into it). Sound only where the CPU has AVX2 (see the module docs).
    macro_rules! avx2 {
        ($(#[$doc:meta])* fn $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty $body:block) => {
            $(#[$doc])*
            #[allow(clippy::too_many_arguments)]
            fn $name($($arg: $ty),*) -> $ret {
                #[target_feature(enable = "avx2")]
                #[allow(clippy::too_many_arguments)]
                fn wide($($arg: $ty),*) -> $ret $body
                // SAFETY: reached only through `Kernels::for_this_cpu`, after the CPU was found
                // to have AVX2.
                #[allow(unsafe_code)]
                unsafe {
                    wide($($arg),*)
                }
            }
        };
    }

    /// The AVX2 kernels (the `f32` matcher's lane sums AVX2 too).
    pub(super) fn avx2() -> Kernels {
        Kernels {
            name: "AVX2",
            fill_rows,
            describe_all,
            fill_haar_rows,
            match_f32: match_range_f32_with::<Avx2LaneSums>,
            match_q7,
        }
    }

    /// `kernels` with the `f32` matcher's lane sums in AVX-512: its 16 lanes are one register,
    /// so a pair of descriptors costs four subtractions, multiplications and additions (AVX2:
    /// eight each). The rest stays AVX2: wider vectors did not make those loops faster
    /// (docs/BENCHMARKS.md).
    pub(super) fn with_avx512_f32_matcher(kernels: Kernels) -> Kernels {
        Kernels {
            name: "AVX2, AVX-512F matcher",
            match_f32: match_range_f32_with::<Avx512LaneSums>,
            ..kernels
        }
    }

    avx2! {
        /// `OctaveFill::fill_rows` in AVX2, its box sums out of line ([`Avx2BoxSums`]).
        fn fill_rows(fill: &OctaveFill<'_>, rows: Range<usize>, out: &mut [u32],
                     columns: &mut [u32]) -> Result<(), SurfError> {
            fill.fill_rows::<Avx2BoxSums>(rows, out, columns)
        }
    }

    avx2! {
        /// `describe_all_with_maps` in AVX2.
        fn describe_all(ii: &IntegralImage<'_>, keypoints: &mut [Keypoint], upright: bool,
                        out: &mut [Descriptor], maps: &[HaarMap<'_>])
            -> Result<(), DescribeError> {
            describe_all_with_maps(ii, keypoints, upright, out, maps)
        }
    }

    avx2! {
        /// `haar_map::fill_rows` in AVX2.
        fn fill_haar_rows(ii: &IntegralImage<'_>, half: usize, rows: Range<usize>,
                          cells: &mut [HaarCell]) -> Result<(), HaarMapError> {
            haar_map::fill_rows(ii, half, rows, cells)
        }
    }

    avx2! {
        /// `match_range_q7` in AVX2, its distance kernel inlined.
        fn match_q7(query_keypoints: &[Keypoint], query_descriptors: &[DescriptorQ7],
                    queries: Range<usize>, train_keypoints: &[Keypoint],
                    train_descriptors: &[DescriptorQ7], config: &MatchConfig,
                    best: &mut [TrainBest], out: &mut [Match]) -> Result<usize, MatchError> {
            match_range_q7_with::<InlineDistanceQ7>(
                query_keypoints,
                query_descriptors,
                queries,
                train_keypoints,
                train_descriptors,
                config,
                best,
                out,
            )
        }
    }

    /// The core's box sums compiled with AVX2, out of line (inlined into the fill, LLVM cannot
    /// tell that the column sums and the box rows do not overlap and keeps the loop scalar).
    struct Avx2BoxSums;

    impl BoxSums for Avx2BoxSums {
        #[inline(always)]
        fn box_sums<const STEP: usize>(v: &[u32], lo: usize, hi: usize, out: &mut [u32]) {
            #[target_feature(enable = "avx2")]
            #[inline(never)]
            fn wide<const STEP: usize>(v: &[u32], lo: usize, hi: usize, out: &mut [u32]) {
                InlineBoxSums::box_sums::<STEP>(v, lo, hi, out);
            }
            // SAFETY: used only by the AVX2 `fill_rows` (see the module docs).
            #[allow(unsafe_code)]
            unsafe {
                wide::<STEP>(v, lo, hi, out);
            }
        }
    }

    /// Defines `$name`, the core's `f32` lane sums compiled with the target feature `$feature`,
    /// out of line (a `target_feature` takes only a literal, so a generic cannot stand for it).
    /// Same IEEE operations per lane as the portable kernel, so the same bits. Sound only where
    /// the CPU has `$feature`.
    macro_rules! lane_sums_with {
        ($(#[$doc:meta])* $name:ident, $feature:literal) => {
            $(#[$doc])*
            struct $name;

            impl LaneSums for $name {
                #[inline(always)]
                fn lane_sums(a: &Descriptor, b: &Descriptor) -> [f32; 16] {
                    #[target_feature(enable = $feature)]
                    #[inline(never)]
                    fn wide(a: &Descriptor, b: &Descriptor) -> [f32; 16] {
                        InlineLaneSums::lane_sums(a, b)
                    }
                    // SAFETY: the kernels that use it are chosen only where the CPU has
                    // `$feature`: AVX2 in `Kernels::for_this_cpu`, AVX-512F in
                    // `with_avx512_f32_matcher` (see the module docs).
                    #[allow(unsafe_code)]
                    unsafe {
                        wide(a, b)
                    }
                }
            }
        };
    }

    lane_sums_with! {
        /// The core's `f32` lane sums compiled with AVX2, out of line on purpose (see the
        /// module docs of `simd`).
        Avx2LaneSums, "avx2"
    }

    lane_sums_with! {
        /// The core's `f32` lane sums compiled with AVX-512F, out of line.
        Avx512LaneSums, "avx512f"
    }
}
