//! The banded path against the full-frame path: the same keypoints bit for bit (both
//! arithmetics) on the boat frames and on synthetic frames; the same descriptors where the band
//! holds their windows, and, where it clips them, the difference measured; the correct matches on
//! boat 1-2 and 1-3 within 5% of the full-frame path's.
//!
//! The configuration is the firmware's (docs/ARCHITECTURE.md, "The banded path"): 3 octaves,
//! first sample step 2, a band of `band_rows_for(3, 2, 8)` = 130 rows advancing by 8.

use std::path::PathBuf;

use surfcl_core::banded::{
    self, BandArithmetic, BandBuffers, BandedSurf, clipped_reach, describe_f32_q7,
    describe_fixed_q7, descriptor_reach,
};
use surfcl_core::describe::{describe_all, to_q7};
use surfcl_core::fixed::describe_all_q7;
use surfcl_core::homography::{Homography, is_correct};
use surfcl_core::keypoint::{DescriptorQ7, Keypoint, KeypointBuffer, KeypointSink};
use surfcl_core::matcher::{Match, MatchConfig, TrainBest, match_q7};
use surfcl_core::surf::{self, DetectStats, FixedPoint, Float, SurfConfig};
use surfcl_core::{GrayImage, IntegralImage};

const ADVANCE: usize = 8;
const CAPACITY: usize = 4000;
/// The firmware's octaves in 256 KB.
const OCTAVES: u8 = 3;

fn config() -> SurfConfig {
    let octaves = OCTAVES;
    SurfConfig {
        octaves,
        ..SurfConfig::default()
    }
}

fn band_rows() -> usize {
    banded::band_rows_for(config().octaves, config().init_sample_step, ADVANCE)
}

fn data(dir: &str, name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../data")
        .join(dir)
        .join(name)
}

/// A binary PGM of the test data (comment lines skipped).
fn read_pgm(dir: &str, name: &str) -> (Vec<u8>, usize, usize) {
    let bytes = std::fs::read(data(dir, name)).unwrap();
    let text = String::from_utf8_lossy(&bytes[..64]).into_owned();
    let header: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    let header = header.join(" ");
    let mut fields = header.split_ascii_whitespace();
    assert_eq!(fields.next(), Some("P5"));
    let w: usize = fields.next().unwrap().parse().unwrap();
    let h: usize = fields.next().unwrap().parse().unwrap();
    assert_eq!(fields.next(), Some("255"));
    (bytes[bytes.len() - w * h..].to_vec(), w, h)
}

/// Keypoints (strongest first), Q7 descriptors and counts of one path.
struct Result {
    keypoints: Vec<Keypoint>,
    descriptors: Vec<DescriptorQ7>,
    stats: DetectStats,
}

/// The full-frame path with arithmetic `A`: detection, then orientation and descriptors
/// (`f32` quantised to Q7, or fixed point).
fn full_frame<A: BandArithmetic + 'static>(pixels: &[u8], w: usize, h: usize) -> Result {
    let image = GrayImage::new(pixels, w, h).unwrap();
    let mut table = vec![0u32; (w + 1) * (h + 1)];
    let ii = IntegralImage::compute(&image, &mut table).unwrap();
    let config = config();
    let mut scratch = vec![0u32; surf::scratch_len_with(&config, w, h).unwrap()];
    let mut storage = vec![Keypoint::ZERO; CAPACITY];
    let mut sink = KeypointBuffer::new(&mut storage);
    let stats = surf::detect_with::<A, _>(&ii, &config, &mut scratch, &mut sink).unwrap();
    let mut keypoints = sink.points().to_vec();
    let descriptors = if is_fixed::<A>() {
        let mut d = vec![[0i8; 64]; keypoints.len()];
        describe_all_q7(&ii, &mut keypoints, false, &mut d).unwrap();
        d
    } else {
        let mut d = vec![[0f32; 64]; keypoints.len()];
        describe_all(&ii, &mut keypoints, false, &mut d).unwrap();
        d.iter().map(to_q7).collect()
    };
    Result {
        keypoints,
        descriptors,
        stats,
    }
}

fn is_fixed<A: 'static>() -> bool {
    std::any::TypeId::of::<A>() == std::any::TypeId::of::<FixedPoint>()
}

/// The banded path with arithmetic `A`, rows pushed one at a time.
fn banded<A: BandArithmetic + 'static>(pixels: &[u8], w: usize, h: usize) -> Result {
    let config = config();
    let rows = band_rows();
    let mut table = vec![0u32; banded::band_table_len(w, rows)];
    let mut maps =
        vec![0u32; banded::band_maps_len(w, config.octaves, config.init_sample_step, ADVANCE)];
    let mut keypoints = vec![Keypoint::ZERO; CAPACITY];
    let mut descriptors = vec![[0i8; 64]; CAPACITY];
    let buffers = BandBuffers {
        table: &mut table,
        maps: &mut maps,
        keypoints: &mut keypoints,
        descriptors: &mut descriptors,
    };
    let describe = if is_fixed::<A>() {
        describe_fixed_q7
    } else {
        describe_f32_q7
    };
    let mut surf =
        BandedSurf::<A, DescriptorQ7>::new(&config, w, h, rows, ADVANCE, buffers, describe)
            .unwrap();
    for row in pixels.chunks_exact(w) {
        surf.push_row(row).unwrap();
    }
    assert!(surf.is_complete());
    Result {
        keypoints: surf.keypoints().to_vec(),
        descriptors: surf.descriptors().to_vec(),
        stats: surf.stats(),
    }
}

/// The keypoint without its orientation (compared separately).
fn position(kp: &Keypoint) -> Keypoint {
    Keypoint {
        orientation: 0.0,
        ..*kp
    }
}

/// Checks that banded and full-frame keypoints are the same bits, and counts the descriptors
/// that differ among the keypoints whose windows the band holds whole (`exact`) and among the
/// others (`clipped`), returning `(exact keypoints, differing exact, clipped keypoints,
/// differing clipped)`.
fn compare(name: &str, full: &Result, band: &Result) -> (usize, usize, usize, usize) {
    assert_eq!(full.stats, band.stats, "{name}: counts");
    assert_eq!(full.keypoints.len(), band.keypoints.len(), "{name}: count");
    let cap = clipped_reach(band_rows(), ADVANCE);
    let mut counts = (0, 0, 0, 0);
    for (k, (a, b)) in full.keypoints.iter().zip(&band.keypoints).enumerate() {
        assert_eq!(position(a), position(b), "{name}: keypoint {k}");
        let same = a.orientation.to_bits() == b.orientation.to_bits()
            && full.descriptors[k] == band.descriptors[k];
        if descriptor_reach(a) <= cap {
            counts.0 += 1;
            counts.1 += usize::from(!same);
        } else {
            counts.2 += 1;
            counts.3 += usize::from(!same);
        }
    }
    counts
}

fn check_frame(name: &str, pixels: &[u8], w: usize, h: usize) {
    for fixed in [false, true] {
        let (full, band) = if fixed {
            (
                full_frame::<FixedPoint>(pixels, w, h),
                banded::<FixedPoint>(pixels, w, h),
            )
        } else {
            (
                full_frame::<Float>(pixels, w, h),
                banded::<Float>(pixels, w, h),
            )
        };
        let (exact, exact_diff, clipped, clipped_diff) = compare(name, &full, &band);
        let kind = if fixed { "fixed" } else { "f32" };
        eprintln!(
            "{name} {kind}: {} keypoints identical; descriptors: {exact_diff} of {exact} with \
             whole windows differ, {clipped_diff} of {clipped} with clipped windows",
            full.keypoints.len()
        );
        // The fixed-point descriptor's sample positions are integers: shifting them by the
        // band's first row is exact. The f32 one rounds `y + offset` in f32, whose last bit
        // depends on the magnitude of `y`: a sample exactly at a rounding edge can move by one
        // pixel (ARCHITECTURE.md, "The banded path").
        if fixed {
            assert_eq!(
                exact_diff, 0,
                "{name}: fixed descriptors with whole windows"
            );
        } else {
            assert!(
                exact_diff * 100 <= exact.max(1) * 2,
                "{name}: {exact_diff} of {exact} f32 descriptors differ"
            );
        }
    }
}

#[test]
fn boat_qvga_keypoints_are_the_full_frame_ones() {
    for n in 1..=6 {
        let (pixels, w, h) = read_pgm("boat-qvga", &format!("img{n}.pgm"));
        check_frame(&format!("boat-qvga img{n}"), &pixels, w, h);
    }
}

#[test]
fn oxford_boat_keypoints_are_the_full_frame_ones() {
    let (pixels, w, h) = read_pgm("oxford-boat", "img1.pgm");
    check_frame("oxford-boat img1", &pixels, w, h);
}

#[test]
fn synthetic_frames_give_the_full_frame_keypoints() {
    // Blobs of many sizes on a gradient, noise, and frame sizes that are not multiples of the
    // band's advance or of the sample steps.
    for (w, h, seed) in [(160, 120, 1u32), (97, 203, 2), (320, 240, 3), (64, 300, 4)] {
        let mut state = seed.wrapping_mul(0x9e37_79b9);
        let pixels: Vec<u8> = (0..w * h)
            .map(|i| {
                let (x, y) = ((i % w) as f32, (i / w) as f32);
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                let blobs = (x / 9.0).sin() * (y / 13.0).cos() * 60.0
                    + ((x * 0.31 + y * 0.17).sin() * 40.0);
                (110.0 + blobs + y * 0.2 + (state % 16) as f32).clamp(0.0, 255.0) as u8
            })
            .collect();
        check_frame(&format!("synthetic {w}x{h}"), &pixels, w, h);
    }
}

/// Correct matches (3 px, the CLI's tolerance) of a query/train pair under `h`.
fn correct_matches(one: &Result, other: &Result, h: &Homography) -> (usize, usize) {
    let config = MatchConfig::default();
    let (q, qd, t, td) = (
        &one.keypoints,
        &one.descriptors,
        &other.keypoints,
        &other.descriptors,
    );
    let mut best = vec![TrainBest::EMPTY; t.len()];
    let mut out = vec![Match::default(); q.len()];
    let k = match_q7(q, qd, t, td, &config, &mut best, &mut out).unwrap();
    let correct = out[..k]
        .iter()
        .filter(|m| is_correct(h, &q[m.query as usize], &t[m.train as usize], 3.0))
        .count();
    (correct, k)
}

#[test]
fn boat_qvga_matches_are_within_5_percent_of_the_full_frame_path() {
    let load = |n: usize| read_pgm("boat-qvga", &format!("img{n}.pgm"));
    let (p1, w, h) = load(1);
    for fixed in [false, true] {
        let run = |p: &[u8], band: bool| match (fixed, band) {
            (false, false) => full_frame::<Float>(p, w, h),
            (false, true) => banded::<Float>(p, w, h),
            (true, false) => full_frame::<FixedPoint>(p, w, h),
            (true, true) => banded::<FixedPoint>(p, w, h),
        };
        let (full1, band1) = (run(&p1, false), run(&p1, true));
        for n in [2, 3] {
            let (pn, _, _) = load(n);
            let text = std::fs::read_to_string(data("boat-qvga", &format!("H1to{n}p"))).unwrap();
            let hom = Homography::parse(&text).unwrap();
            let (full_correct, full_k) = correct_matches(&full1, &run(&pn, false), &hom);
            let (band_correct, band_k) = correct_matches(&band1, &run(&pn, true), &hom);
            let kind = if fixed { "fixed" } else { "f32" };
            eprintln!(
                "boat-qvga 1-{n} {kind}: full frame {full_correct} correct of {full_k} matches, \
                 banded {band_correct} correct of {band_k}"
            );
            assert!(full_correct >= 20, "too few correct matches to judge");
            assert!(
                band_correct * 100 >= full_correct * 95,
                "1-{n} {kind}: banded {band_correct} vs full frame {full_correct}"
            );
        }
    }
}
