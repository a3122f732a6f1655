//! Wider vector instructions for the CPU backend's hot loops, chosen at run time.
//!
//! `surfcl-core` is built for the target's baseline (SSE2 on x86-64, so that one binary runs on
//! every x86-64 CPU; NEON is already the baseline on aarch64). Its orientation and descriptor
//! loops are written to vectorise, and with AVX2 they run 8 lanes wide instead of 4: orientation
//! takes about half the time. Here, and only here, the std layer asks the CPU once whether it
//! has AVX2 and then runs the core's inlined loops compiled for it: description, and the Q7
//! matcher (1.8x on N = 3000). The `f32` matcher stays portable: inlined into its loop, its
//! 16-lane kernel is split by LLVM into narrow vectors and gets slower, even with AVX2 (the
//! portable build keeps it out of line for the same reason). The results are identical to the
//! portable build, bit for bit (same IEEE operations per element, no FMA contraction; Q7
//! distances are exact integers); the tests below check that on real images.

use std::ops::Range;

use surfcl_core::describe::{DescribeError, describe_all};
use surfcl_core::matcher::{Match, MatchConfig, MatchError, TrainBest};
use surfcl_core::{Descriptor, DescriptorQ7, IntegralImage, Keypoint};

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
    /// [`describe_all`], with AVX2 where the CPU has it (x86-64), else the portable build.
    describe_all_widest = describe_all, surfcl_core::describe::describe_all_inlined;
    fn(ii: &IntegralImage<'_>, keypoints: &mut [Keypoint], upright: bool, out: &mut [Descriptor])
        -> Result<(), DescribeError>
}

widest! {
    /// `surfcl_core::matcher::match_range_q7`, with AVX2 where the CPU has it.
    match_range_q7_widest = surfcl_core::matcher::match_range_q7,
        surfcl_core::matcher::match_range_q7_inlined;
    fn(query_keypoints: &[Keypoint], query_descriptors: &[DescriptorQ7], queries: Range<usize>,
       train_keypoints: &[Keypoint], train_descriptors: &[DescriptorQ7], config: &MatchConfig,
       best: &mut [TrainBest], out: &mut [Match]) -> Result<usize, MatchError>
}

#[cfg(test)]
mod tests {
    use super::*;
    use surfcl_core::integral::integral_len;

    #[test]
    fn wide_description_equals_the_portable_one() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../data/oxford-boat/img1.pgm");
        let owned = crate::io::load_gray(std::path::Path::new(path)).unwrap();
        let image = owned.view().unwrap();
        let mut table = vec![0u32; integral_len(image.width(), image.height()).unwrap()];
        let ii = IntegralImage::compute(&image, &mut table).unwrap();
        // Detected-like keypoints over the whole frame, borders and large scales included.
        let mut keypoints: Vec<Keypoint> = (0..600)
            .map(|i| Keypoint {
                x: (i * 37 % 870) as f32 - 10.0 + 0.3,
                y: (i * 53 % 700) as f32 - 10.0 + 0.6,
                scale: 1.2 + (i % 40) as f32 * 1.3,
                ..Keypoint::default()
            })
            .collect();
        for upright in [false, true] {
            let mut portable_kps = keypoints.clone();
            let mut portable = vec![[0f32; 64]; keypoints.len()];
            describe_all(&ii, &mut portable_kps, upright, &mut portable).unwrap();
            let mut wide = vec![[1f32; 64]; keypoints.len()];
            describe_all_widest(&ii, &mut keypoints, upright, &mut wide).unwrap();
            for (a, b) in portable_kps.iter().zip(&keypoints) {
                assert_eq!(a.orientation.to_bits(), b.orientation.to_bits(), "{a:?}");
            }
            for (a, b) in portable.iter().zip(&wide) {
                assert_eq!(a.map(f32::to_bits), b.map(f32::to_bits));
            }
            assert!(portable.iter().any(|d| d.iter().any(|&v| v != 0.0)));
        }
        let mut short = vec![[0f32; 64]; 1];
        assert!(describe_all_widest(&ii, &mut keypoints, false, &mut short).is_err());
    }

    #[test]
    fn wide_matching_equals_the_portable_one() {
        use crate::backend::{Backend, DetectParams};
        use surfcl_core::describe::to_q7;
        use surfcl_core::matcher::{match_range_q7, scratch_len};
        let mut backend = crate::cpu::CpuBackend::with_threads(1);
        let features: Vec<_> = ["img1", "img2"]
            .iter()
            .map(|name| {
                let path = format!(
                    "{}/../data/oxford-boat/{name}.pgm",
                    env!("CARGO_MANIFEST_DIR")
                );
                let owned = crate::io::load_gray(std::path::Path::new(&path)).unwrap();
                backend
                    .detect(&owned.view().unwrap(), &DetectParams::default())
                    .unwrap()
            })
            .collect();
        let (q, t) = (&features[0], &features[1]);
        assert!(q.keypoints.len() > 1000 && t.keypoints.len() > 1000);
        let (q7_q, q7_t): (Vec<_>, Vec<_>) = (
            q.descriptors.iter().map(to_q7).collect(),
            t.descriptors.iter().map(to_q7).collect(),
        );
        let n = q.keypoints.len();
        let key = |m: &Match| (m.query, m.train, m.distance.to_bits());
        for (sign_test, cross_check) in [(true, false), (false, false), (true, true)] {
            let config = MatchConfig {
                sign_test,
                cross_check,
                ..MatchConfig::default()
            };
            let scratch = if cross_check {
                scratch_len(t.keypoints.len())
            } else {
                0
            };
            // Q7: the portable core against the widest build (the f32 matcher is portable).
            let run = |wide: bool| {
                let mut best = vec![TrainBest::EMPTY; scratch];
                let mut out = vec![Match::default(); n];
                let matcher = if wide {
                    match_range_q7_widest
                } else {
                    match_range_q7
                };
                let count = matcher(
                    &q.keypoints,
                    &q7_q,
                    0..n,
                    &t.keypoints,
                    &q7_t,
                    &config,
                    &mut best,
                    &mut out,
                )
                .unwrap();
                out[..count].iter().map(key).collect::<Vec<_>>()
            };
            let portable = run(false);
            assert!(portable.len() > 300, "{sign_test} {cross_check}");
            assert_eq!(portable, run(true), "{sign_test} {cross_check}");
        }
    }
}
