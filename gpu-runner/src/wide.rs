//! Wider vector instructions for the CPU backend's hot loops, chosen at run time.
//!
//! `surfcl-core` is built for the target's baseline (SSE2 on x86-64, so that one binary runs on
//! every x86-64 CPU; NEON is already the baseline on aarch64). Its orientation and descriptor
//! loops are written to vectorise, and with AVX2 they run 8 lanes wide instead of 4: orientation
//! takes about half the time. Here, and only here, the std layer asks the CPU once whether it
//! has AVX2 and then runs the core's inlined loops compiled for it. The results are identical to
//! the portable build, bit for bit (same IEEE operations per element, no FMA contraction);
//! `wide_description_equals_the_portable_one` checks that on a real image.

use surfcl_core::describe::{DescribeError, describe_all};
use surfcl_core::{Descriptor, IntegralImage, Keypoint};

/// [`describe_all`], with AVX2 where the CPU has it (x86-64), else the portable build.
pub(crate) fn describe_all_widest(
    ii: &IntegralImage<'_>,
    keypoints: &mut [Keypoint],
    upright: bool,
    out: &mut [Descriptor],
) -> Result<(), DescribeError> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: `describe_all_avx2` needs nothing but AVX2, which the CPU was just found to
        // have (the detection result is cached by std after the first call).
        #[allow(unsafe_code)]
        return unsafe { describe_all_avx2(ii, keypoints, upright, out) };
    }
    describe_all(ii, keypoints, upright, out)
}

/// The core's description loops compiled with AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn describe_all_avx2(
    ii: &IntegralImage<'_>,
    keypoints: &mut [Keypoint],
    upright: bool,
    out: &mut [Descriptor],
) -> Result<(), DescribeError> {
    surfcl_core::describe::describe_all_inlined(ii, keypoints, upright, out)
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
}
