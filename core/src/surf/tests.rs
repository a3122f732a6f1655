use std::vec::Vec;

use super::test_util::*;
use super::*;
use crate::integral::IntegralImage;
use crate::keypoint::{Keypoint, KeypointBuffer, KeypointSet, KeypointSink};
use rand::{Rng, SeedableRng, rngs::StdRng};

/// Grid rows `rows` of `octave`'s maps into `out`, every sample from the integral table.
fn fill_octave_rows(
    ii: &IntegralImage,
    config: &SurfConfig,
    octave: u32,
    rows: core::ops::Range<usize>,
    out: &mut [u32],
) -> Result<(), SurfError> {
    OctaveFill::new(ii, config, octave)?.fill_rows::<PortableBoxSums>(rows, out, &mut [])
}

/// [`fill_octave_rows`] with the column sums in `columns`, from interval `from` on.
fn fill_octave_rows_with_columns_from(
    ii: &IntegralImage,
    config: &SurfConfig,
    octave: u32,
    rows: core::ops::Range<usize>,
    out: &mut [u32],
    columns: &mut [u32],
    from: u32,
) -> Result<(), SurfError> {
    OctaveFill::new(ii, config, octave)?
        .starting_at(from)?
        .fill_rows::<PortableBoxSums>(rows, out, columns)
}

/// A [`Strategy`] that fills with `fill(octave fill, rows, out)` and scans with the default:
/// `f32` octaves in bands of `band` rows, each scanned as soon as it can be
/// ([`fill_and_scan_in_bands`]); with `band` 0, each octave in one call, then scanned.
struct FillWith<F> {
    band: usize,
    fill: F,
}

impl<F> Strategy for FillWith<F>
where
    F: FnMut(&OctaveFill<'_>, core::ops::Range<usize>, &mut [u32]) -> Result<(), SurfError>,
{
    fn fill(
        &mut self,
        fill: &OctaveFill<'_>,
        rows: core::ops::Range<usize>,
        out: &mut [u32],
    ) -> Result<(), SurfError> {
        (self.fill)(fill, rows, out)
    }

    fn band_rows(&self) -> usize {
        self.band
    }
}

/// A [`Strategy`] that fills every row from the table and scans with `scan(maps, sink, stats)`.
struct ScanWith<F>(F);

impl<F> Strategy for ScanWith<F>
where
    F: FnMut(&OctaveMaps<'_>, &mut KeypointBuffer<'_>, &mut DetectStats) -> Result<(), SurfError>,
{
    fn fill(
        &mut self,
        fill: &OctaveFill<'_>,
        rows: core::ops::Range<usize>,
        out: &mut [u32],
    ) -> Result<(), SurfError> {
        fill.fill_rows::<PortableBoxSums>(rows, out, &mut [])
    }

    fn fill_and_scan<S: KeypointSink>(
        &mut self,
        fill: &OctaveFill<'_>,
        maps: &mut [u32],
        sink: &mut S,
        stats: &mut DetectStats,
    ) -> Result<(), SurfError> {
        self.fill(fill, 0..fill.grid().1, maps)?;
        // The scan offers into a buffer of its own, then into `sink`.
        let mut storage = vec![Keypoint::default(); 200_000];
        let mut buffer = KeypointBuffer::new(&mut storage);
        (self.0)(&fill.maps(maps, 0), &mut buffer, stats)?;
        for &p in buffer.points() {
            sink.offer(p);
        }
        Ok(())
    }
}

/// Straightforward f64 evaluation: pixels summed one by one (clipped to the image), OpenSURF's
/// floating-point formula on intensities in [0, 1].
fn direct_response(img: &Owned, row: i64, col: i64, size: i64) -> (f64, i8) {
    let sum = |r0: i64, c0: i64, rows: i64, cols: i64| -> f64 {
        let mut s = 0u64;
        for r in r0.max(0)..(r0 + rows).min(img.height as i64) {
            for c in c0.max(0)..(c0 + cols).min(img.width as i64) {
                s += u64::from(img.pixels[r as usize * img.width + c as usize]);
            }
        }
        s as f64 / 255.0
    };
    let (l, b) = (size / 3, (size - 1) / 2);
    let (r, c) = (row, col);
    let dxx =
        sum(r - l + 1, c - b, 2 * l - 1, size) - 3.0 * sum(r - l + 1, c - l / 2, 2 * l - 1, l);
    let dyy =
        sum(r - b, c - l + 1, size, 2 * l - 1) - 3.0 * sum(r - l / 2, c - l + 1, l, 2 * l - 1);
    let dxy = sum(r - l, c + 1, l, l) + sum(r + 1, c - l, l, l)
        - sum(r - l, c - l, l, l)
        - sum(r + 1, c + 1, l, l);
    let area = (size * size) as f64;
    let (dxx, dyy, dxy) = (dxx / area, dyy / area, dxy / area);
    (
        dxx * dyy - 0.81 * dxy * dxy,
        if dxx + dyy >= 0.0 { 1 } else { -1 },
    )
}

fn random_smooth_image(w: usize, h: usize, seed: u64) -> Owned {
    let mut rng = StdRng::seed_from_u64(seed);
    let spots: Vec<(f32, f32, f32, f32)> = (0..60)
        .map(|_| {
            (
                rng.gen_range(0.0..w as f32),
                rng.gen_range(0.0..h as f32),
                rng.gen_range(1.5..8.0),
                rng.gen_range(-90.0..90.0),
            )
        })
        .collect();
    blobs(w, h, 128.0, &spots)
}

#[test]
fn filter_geometry_matches_the_table() {
    let expected = [
        [9, 15, 21, 27],
        [15, 27, 39, 51],
        [27, 51, 75, 99],
        [51, 99, 147, 195],
    ];
    for (o, row) in expected.iter().enumerate() {
        for (i, &l) in row.iter().enumerate() {
            assert_eq!(filter_size(o as u32, i as u32), l);
        }
    }
    assert_eq!(filter_size(5, 3), 771);
    let c = SurfConfig::default();
    assert_eq!(sample_step(&c, 0), 2);
    assert_eq!(sample_step(&c, 3), 16);
    assert_eq!(grid_size(850, 680, 4), (212, 170));
    assert_eq!(grid_size(5, 5, 0), (0, 0));
    // (27 + 1) / (2 * 2) = 7 for interval 2 of octave 0.
    assert_eq!(nms_border(&c, 0, 2), 7);
}

#[test]
fn responses_equal_direct_f64_sums() {
    let img = random_smooth_image(97, 83, 11);
    let ii = img.ii();
    let mut rng = StdRng::seed_from_u64(5);
    let mut compared = 0;
    for _ in 0..400 {
        let o = rng.gen_range(0..4);
        let size = filter_size(o, rng.gen_range(0..4));
        // Include points near and beyond the border, where the boxes are clipped.
        let (row, col) = (rng.gen_range(-3..90), rng.gen_range(-3..100));
        let (fast, lap) = response_at(&ii, row, col, size);
        let (direct, dlap) = direct_response(&img, row as i64, col as i64, size as i64);
        let err = (f64::from(fast) - direct).abs();
        assert!(
            err <= 1e-5 * direct.abs() + 1e-15,
            "L={size} at ({row},{col}): {fast} vs {direct}"
        );
        assert_eq!(lap, dlap);
        compared += usize::from(direct.abs() > 1e-6);
    }
    // Most points have a clearly non-zero response: the comparison is not vacuous.
    assert!(compared > 300, "{compared}");
}

#[test]
fn octave_maps_are_response_at_bit_for_bit() {
    let img = random_smooth_image(70, 61, 2);
    let ii = img.ii();
    for precision in [Precision::F32, Precision::Packed8] {
        let config = SurfConfig {
            precision,
            threshold: 0.0001,
            ..Default::default()
        };
        let table = PackedCodeTable::new(config.threshold);
        for o in 0..config.octaves as u32 {
            let step = sample_step(&config, o);
            let (gw, gh) = grid_size(img.width, img.height, step);
            let mut f = std::vec![0f32; gw * gh * 4];
            compute_octave_f32(&ii, &config, o, &mut f).unwrap();
            let mut p = std::vec![0u32; gw * gh];
            compute_octave_packed(&ii, &config, o, &table, &mut p).unwrap();
            let view = PackedResponses::new_checked(&p, gw, gh).unwrap();
            let mut nonzero = 0;
            for sy in 0..gh {
                for sx in 0..gw {
                    for i in 0..4 {
                        let (r, lap) = response_at(
                            &ii,
                            (sy as u32 * step) as i32,
                            (sx as u32 * step) as i32,
                            filter_size(o, i),
                        );
                        let i = i as usize;
                        assert_eq!(f[(sy * gw + sx) * 4 + i].to_bits(), r.to_bits());
                        let byte = pack_byte(table.code(r), lap);
                        assert_eq!(view.byte(sx, sy, i), byte);
                        assert_eq!(view.code(sx, sy, i), byte & 0x7f);
                        assert_eq!(view.laplacian(sx, sy, i), lap);
                        nonzero += usize::from(byte & 0x7f != 0);
                    }
                }
            }
            if o == 0 {
                assert!(nonzero > 0, "no sample above threshold: vacuous test");
            }
            assert_eq!(view.byte(gw, 0, 0), 0);
            assert_eq!(view.byte(0, 0, 4), 0);
        }
    }
}

#[test]
fn packed_bytes_on_boat_match_response_at() {
    let img = boat(1);
    let ii = img.ii();
    let config = SurfConfig::default();
    let table = PackedCodeTable::new(config.threshold);
    let mut scratch = std::vec![0u32; scratch_len(&config, img.width, img.height).unwrap()];
    let mut coded = 0usize;
    for o in 0..config.octaves as u32 {
        let step = sample_step(&config, o);
        let (gw, gh) = grid_size(img.width, img.height, step);
        compute_octave_packed(&ii, &config, o, &table, &mut scratch).unwrap();
        let view = PackedResponses::new_checked(&scratch, gw, gh).unwrap();
        for sy in 0..gh {
            for sx in 0..gw {
                for i in 0..4 {
                    let (r, lap) = response_at(
                        &ii,
                        (sy as u32 * step) as i32,
                        (sx as u32 * step) as i32,
                        filter_size(o, i),
                    );
                    let expected = pack_byte(table.code(r), lap);
                    assert_eq!(view.byte(sx, sy, i as usize), expected);
                    coded += usize::from(expected & 0x7f != 0);
                }
            }
        }
    }
    assert!(coded > 1000, "{coded}");
}

#[test]
fn scratch_capacity_is_const_and_bounds_every_smaller_frame() {
    const QVGA_PACKED: usize = scratch_capacity(320, 240, Precision::Packed8, 2);
    const QVGA_F32: usize = scratch_capacity(320, 240, Precision::F32, 2);
    assert_eq!((QVGA_PACKED, QVGA_F32), (160 * 120, 4 * 160 * 120));
    let mut rng = StdRng::seed_from_u64(3);
    for precision in [Precision::F32, Precision::Packed8] {
        for step in [1u8, 2] {
            let config = SurfConfig {
                precision,
                init_sample_step: step,
                ..SurfConfig::default()
            };
            let cap = scratch_capacity(321, 239, precision, step);
            assert_eq!(scratch_len(&config, 321, 239).unwrap(), cap);
            for _ in 0..200 {
                let (w, h) = (rng.gen_range(1..=321), rng.gen_range(1..=239));
                assert!(scratch_len(&config, w, h).unwrap() <= cap);
            }
        }
    }
    assert_eq!(scratch_capacity(100, 100, Precision::F32, 0), 0);
}

#[test]
fn response_norms_table_is_response_norm_of_every_filter() {
    for o in 0..u32::from(MAX_OCTAVES) {
        for i in 0..INTERVALS {
            let l = core::hint::black_box(filter_size(o, i));
            assert_eq!(RESPONSE_NORMS[o as usize][i as usize], response_norm(l));
            assert_eq!(
                response_norm(l),
                (1.0 / (100.0 * f64::from(l).powi(4) * 65025.0)) as f32
            );
        }
    }
}

#[test]
fn code_table_is_log_companded_and_monotonic() {
    let t = PackedCodeTable::new(0.0004);
    let s = t.as_slice();
    assert_eq!(s[0], 0.0004);
    assert_eq!(s[8], 0.0008);
    assert!(s.windows(2).all(|w| w[0] < w[1]));
    // The f32 definition is within one rounding of threshold * 2^((k - 1) / 8) in f64 (the old
    // definition), and its factors 2^(j / 8) are the correctly rounded ones.
    for (k, &v) in s.iter().enumerate() {
        let exact = f64::from(0.0004f32) * (k as f64 / 8.0).exp2();
        let ulp = f64::from(f32::from_bits(v.to_bits() + 1) - v);
        assert!(
            (f64::from(v) - exact).abs() <= ulp,
            "T[{}] = {v} vs {exact}",
            k + 1
        );
    }
    let unit = PackedCodeTable::new(1.0);
    for j in 0..8 {
        assert_eq!(
            unit.as_slice()[j],
            (j as f64 / 8.0).exp2() as f32,
            "2^({j}/8)"
        );
        assert_eq!(unit.as_slice()[j + 8], 2.0 * unit.as_slice()[j]);
    }
    assert_eq!(t.code(f32::NAN), 0);
    assert_eq!(t.code(-1.0), 0);
    assert_eq!(t.code(f32::from_bits(0.0004f32.to_bits() - 1)), 0);
    assert_eq!(t.code(1e9), 127);
    let mut rng = StdRng::seed_from_u64(1);
    for _ in 0..10_000 {
        let (a, b) = (rng.gen_range(0.0..0.05f32), rng.gen_range(0.0..0.05f32));
        let linear = s.iter().filter(|&&x| a >= x).count() as u8;
        assert_eq!(t.code(a), linear);
        if a <= b {
            assert!(t.code(a) <= t.code(b));
        }
    }
    for code in 0..128u8 {
        for lap in [-1i8, 1] {
            assert_eq!(unpack_byte(pack_byte(code, lap)), (code, lap));
        }
    }
}

fn blob_case(s: f32, amplitude: f32) -> Keypoint {
    let (cx, cy) = (100.3, 80.6);
    let bg = if amplitude > 0.0 { 30.0 } else { 220.0 };
    let img = blobs(200, 180, bg, &[(cx, cy, s, amplitude)]);
    let (kps, stats) = detect_vec(&img, &SurfConfig::default());
    assert!(!kps.is_empty(), "sigma {s}: nothing found ({stats:?})");
    let kp = kps[0];
    assert!(
        (kp.x - cx).abs() < 0.5 && (kp.y - cy).abs() < 0.5,
        "sigma {s}: found at ({}, {})",
        kp.x,
        kp.y
    );
    // Every keypoint (a blob may be found in two adjacent octaves) is at the blob.
    for k in &kps {
        assert!((k.x - cx).abs() < 0.5 && (k.y - cy).abs() < 0.5);
    }
    // Measured relation for SURF's box filters: scale ~= 0.75 sigma (0.70..0.81 over sigma
    // 2.5..10); the continuous scale-normalised DoH would peak at sigma itself.
    let expected = BLOB_SCALE_RATIO * s;
    assert!(
        (kp.scale - expected).abs() < 0.15 * expected,
        "sigma {s}: scale {} vs {expected}",
        kp.scale
    );
    kp
}

const BLOB_SCALE_RATIO: f32 = 0.75;

#[test]
fn bright_blob_is_found_with_negative_laplacian() {
    for s in [2.5f32, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0] {
        assert_eq!(blob_case(s, 180.0).laplacian, -1, "sigma {s}");
    }
}

#[test]
fn dark_blob_is_found_with_positive_laplacian() {
    for s in [3.0f32, 5.0, 8.0] {
        assert_eq!(blob_case(s, -180.0).laplacian, 1, "sigma {s}");
    }
}

#[test]
fn packed_mode_keeps_the_f32_keypoints_on_boat() {
    for n in [1, 4] {
        let img = boat(n);
        let f32_config = SurfConfig::default();
        let packed_config = SurfConfig {
            precision: Precision::Packed8,
            ..f32_config
        };
        let (a, sa) = detect_vec(&img, &f32_config);
        let (b, sb) = detect_vec(&img, &packed_config);
        let found = a
            .iter()
            .filter(|p| {
                b.iter().any(|q| {
                    q.octave == p.octave && (q.x - p.x).abs() <= 1.0 && (q.y - p.y).abs() <= 1.0
                })
            })
            .count();
        let identical = a == b;
        std::println!(
            "boat img{n}: f32 {} keypoints, packed {} keypoints, {found} of the f32 ones found \
             ({:.1}%), identical lists: {identical}; packed candidates {} for {} maxima \
             (f32 mode tested {} samples)",
            a.len(),
            b.len(),
            100.0 * found as f64 / a.len() as f64,
            sb.candidates,
            sb.maxima,
            sa.candidates,
        );
        assert!(a.len() > 500);
        assert!(found * 10 >= a.len() * 9);
        // The design promises the same keypoints, bit for bit.
        assert!(identical);
        assert_eq!(sa.maxima, sb.maxima);
    }
}

#[test]
fn refine_exact_agrees_with_detect() {
    let img = boat(1);
    let config = SurfConfig::default();
    let (kps, _) = detect_vec(&img, &config);
    for kp in kps.iter().step_by(7) {
        let site = SampleSite {
            octave: kp.octave,
            interval: kp.interval,
            sx: kp.sample_x,
            sy: kp.sample_y,
        };
        assert_eq!(
            refine_exact(&img.ii(), &config, site),
            Refinement::Keypoint(*kp)
        );
        // A neighbour of a strict maximum is never a maximum.
        let beside = SampleSite {
            sx: site.sx + 1,
            ..site
        };
        assert!(!matches!(
            refine_exact(&img.ii(), &config, beside),
            Refinement::Keypoint(_)
        ));
    }
    let bad = SampleSite {
        octave: 0,
        interval: 3,
        sx: 100,
        sy: 100,
    };
    assert_eq!(
        refine_exact(&img.ii(), &config, bad),
        Refinement::NotInterior
    );
    let edge = SampleSite {
        octave: 0,
        interval: 1,
        sx: 1,
        sy: 100,
    };
    assert_eq!(
        refine_exact(&img.ii(), &config, edge),
        Refinement::NotInterior
    );
}

#[test]
fn keypoint_counts_grow_as_the_threshold_falls() {
    let img = boat(1);
    let mut previous = 0;
    for step in [2u8, 1] {
        for t in [0.0004f32, 0.0001, 0.00005] {
            let config = SurfConfig {
                threshold: t,
                init_sample_step: step,
                precision: Precision::Packed8,
                ..Default::default()
            };
            let (kps, stats) = detect_vec(&img, &config);
            std::println!(
                "boat img1, init_sample_step {step}, threshold {t}: {} keypoints ({stats:?})",
                kps.len()
            );
            assert!(kps.iter().all(|k| k.response >= t));
            assert!(kps.windows(2).all(|w| w[0].rank_cmp(&w[1]).is_lt()));
            if step == 2 {
                assert!(kps.len() >= previous);
                previous = kps.len();
            }
        }
    }
}

#[test]
fn invalid_configurations_are_typed_errors() {
    let img = random_smooth_image(40, 40, 1);
    let ii = img.ii();
    let mut scratch = std::vec![0u32; 10_000];
    let mut sink = KeypointSet::<8>::new();
    let ok = SurfConfig::default();
    let cases = [
        (
            SurfConfig { octaves: 0, ..ok },
            SurfError::InvalidOctaves(0),
        ),
        (
            SurfConfig { octaves: 7, ..ok },
            SurfError::InvalidOctaves(7),
        ),
        (
            SurfConfig {
                init_sample_step: 3,
                ..ok
            },
            SurfError::InvalidSampleStep(3),
        ),
        (
            SurfConfig {
                init_sample_step: 0,
                ..ok
            },
            SurfError::InvalidSampleStep(0),
        ),
        (
            SurfConfig {
                threshold: -1e-6,
                ..ok
            },
            SurfError::InvalidThreshold(-1e-6),
        ),
        (
            SurfConfig {
                threshold: f32::INFINITY,
                ..ok
            },
            SurfError::InvalidThreshold(f32::INFINITY),
        ),
    ];
    for (config, error) in cases {
        assert_eq!(config.validate(), Err(error));
        assert_eq!(detect(&ii, &config, &mut scratch, &mut sink), Err(error));
        assert_eq!(scratch_len(&config, 40, 40), Err(error));
    }
    let nan = SurfConfig {
        threshold: f32::NAN,
        ..ok
    };
    assert!(matches!(nan.validate(), Err(SurfError::InvalidThreshold(t)) if t.is_nan()));
    assert!(matches!(
        detect(&ii, &nan, &mut scratch, &mut sink),
        Err(SurfError::InvalidThreshold(_))
    ));
    assert_eq!(ok.validate(), Ok(()));
    // Scratch too short, in both precisions.
    for precision in [Precision::F32, Precision::Packed8] {
        let config = SurfConfig { precision, ..ok };
        let need = scratch_len(&config, 40, 40).unwrap();
        assert_eq!(
            need,
            20 * 20 * if precision == Precision::F32 { 4 } else { 1 }
        );
        let mut short = std::vec![0u32; need - 1];
        assert_eq!(
            detect(&ii, &config, &mut short, &mut sink),
            Err(SurfError::ScratchLength {
                expected: need,
                actual: need - 1
            })
        );
    }
    assert_eq!(
        scratch_len(&ok, 0, 10),
        Err(SurfError::Image(crate::ImageError::Empty))
    );
    let mut out = [0f32; 3];
    assert_eq!(
        compute_octave_f32(&ii, &ok, 0, &mut out),
        Err(SurfError::ScratchLength {
            expected: 1600,
            actual: 3
        })
    );
    assert_eq!(
        compute_octave_f32(&ii, &ok, 4, &mut out),
        Err(SurfError::OctaveOutOfRange {
            octave: 4,
            octaves: 4
        })
    );
    assert!(PackedResponses::new_checked(&[0u32; 5], 2, 3).is_err());
    // Display is informative.
    let text = std::format!(
        "{}",
        SurfError::ScratchLength {
            expected: 9,
            actual: 2
        }
    );
    assert!(text.contains('9') && text.contains('2'));
}

#[test]
fn tiny_images_give_empty_results() {
    for (w, h) in [(1usize, 1usize), (5, 5), (20, 20), (1, 300), (300, 2)] {
        let img = random_smooth_image(w, h, 3);
        for precision in [Precision::F32, Precision::Packed8] {
            for init_sample_step in [1, 2] {
                let config = SurfConfig {
                    precision,
                    init_sample_step,
                    octaves: 6,
                    threshold: 0.0,
                    ..Default::default()
                };
                let mut scratch = std::vec![0u32; scratch_len(&config, w, h).unwrap()];
                let mut sink = KeypointSet::<8>::new();
                sink.offer(Keypoint::default()); // detect clears the sink
                let stats = detect(&img.ii(), &config, &mut scratch, &mut sink).unwrap();
                assert!(sink.is_empty(), "{w}x{h}");
                assert_eq!(stats, DetectStats::default());
            }
        }
    }
}

#[test]
fn small_sink_keeps_the_strongest() {
    let img = boat(1);
    for precision in [Precision::F32, Precision::Packed8] {
        let config = SurfConfig {
            precision,
            ..Default::default()
        };
        let (all, big) = detect_vec(&img, &config);
        let mut scratch = std::vec![0u32; scratch_len(&config, img.width, img.height).unwrap()];
        let mut set = KeypointSet::<16>::new();
        let stats = detect(&img.ii(), &config, &mut scratch, &mut set).unwrap();
        assert_eq!(set.as_slice(), &all[..16]);
        assert_eq!(stats.kept, 16);
        assert_eq!(stats.dropped, all.len() - 16);
        assert_eq!(stats.offered, big.offered);
        assert_eq!(big.dropped, 0);
        // A buffer of run-time capacity behaves the same.
        let mut storage = [Keypoint::default(); 16];
        let mut buffer = KeypointBuffer::new(&mut storage);
        detect(&img.ii(), &config, &mut scratch, &mut buffer).unwrap();
        assert_eq!(buffer.points(), &all[..16]);
    }
}

#[test]
fn banded_fill_gives_the_keypoints_of_detect() {
    // What a threaded caller does: each octave's maps filled in bands of rows (here 7 rows at a
    // time, uneven on purpose), into disjoint slices of the same scratch.
    let img = boat(1);
    let ii = img.ii();
    for precision in [Precision::F32, Precision::Packed8] {
        let config = SurfConfig {
            precision,
            ..SurfConfig::default()
        };
        let (expected, expected_stats) = detect_vec(&img, &config);
        assert!(expected.len() > 100);
        let mut scratch = vec![0u32; scratch_len(&config, ii.width(), ii.height()).unwrap()];
        let mut storage = vec![Keypoint::default(); 20_000];
        let mut sink = KeypointBuffer::new(&mut storage);
        let words = if precision == Precision::Packed8 {
            1
        } else {
            4
        };
        let mut strategy = FillWith {
            band: 0,
            fill: |fill: &OctaveFill<'_>, rows: core::ops::Range<usize>, maps: &mut [u32]| {
                let (gw, gh) = fill.grid();
                assert_eq!(rows, 0..gh);
                let band = 7;
                for (k, chunk) in maps.chunks_mut(band * gw * words).enumerate() {
                    let first = k * band;
                    let o = fill.octave();
                    fill_octave_rows(&ii, &config, o, first..(first + band).min(gh), chunk)?;
                }
                Ok(())
            },
        };
        let stats =
            detect_with_strategy(&ii, &config, &mut scratch, &mut sink, &mut strategy).unwrap();
        assert_eq!(stats, expected_stats, "{precision:?}");
        assert_eq!(sink.points(), &expected[..], "{precision:?}");
    }
}

#[test]
fn banded_scan_in_band_order_gives_the_keypoints_and_counts_of_detect() {
    // What a threaded caller does: each interval's rows scanned in bands (9 rows, uneven on
    // purpose) into sinks of their own, offered to the frame's sink band after band. With a
    // sink too small for every keypoint too, so that what it keeps depends on what it was
    // offered.
    let img = boat(1);
    let ii = img.ii();
    let config = SurfConfig::default();
    let (all, all_stats) = detect_vec(&img, &config);
    assert!(all.len() > 100);
    let mut scratch = vec![0u32; scratch_len(&config, ii.width(), ii.height()).unwrap()];
    for capacity in [20_000, 300] {
        let mut storage = vec![Keypoint::default(); capacity];
        let mut sink = KeypointBuffer::new(&mut storage);
        let mut bands_scanned = 0;
        let mut strategy = ScanWith(
            |maps: &OctaveMaps<'_>, sink: &mut KeypointBuffer<'_>, stats: &mut DetectStats| {
                for interval in 1..=2 {
                    for first in (0..maps.grid_height()).step_by(9) {
                        let mut band_points = vec![Keypoint::default(); 20_000];
                        let mut band = KeypointBuffer::new(&mut band_points);
                        let mut band_stats = DetectStats::default();
                        maps.scan_rows(interval, first..first + 9, &mut band, &mut band_stats)?;
                        for &p in band.points() {
                            sink.offer(p);
                        }
                        stats.add_scan(&band_stats);
                        bands_scanned += 1;
                    }
                }
                Ok(())
            },
        );
        let stats =
            detect_with_strategy(&ii, &config, &mut scratch, &mut sink, &mut strategy).unwrap();
        assert!(bands_scanned > 40);
        let kept = all.len().min(capacity);
        assert_eq!(sink.points(), &all[..kept], "capacity {capacity}");
        assert_eq!(
            (
                stats.candidates,
                stats.maxima,
                stats.discarded,
                stats.offered
            ),
            (
                all_stats.candidates,
                all_stats.maxima,
                all_stats.discarded,
                all_stats.offered
            )
        );
        assert_eq!((stats.kept, stats.dropped), (kept, all.len() - kept));
    }
    // Only intervals 1 and 2 have scales above and below.
    let mut sink = KeypointSet::<8>::new();
    let mut strategy = ScanWith(
        |maps: &OctaveMaps<'_>, sink: &mut KeypointBuffer<'_>, stats: &mut DetectStats| {
            maps.scan_rows(3, 0..maps.grid_height(), sink, stats)
        },
    );
    let refused = detect_with_strategy(&ii, &config, &mut scratch, &mut sink, &mut strategy);
    assert_eq!(refused, Err(SurfError::Interval(3)));
}

#[test]
fn shared_fill_gives_the_maps_and_keypoints_of_detect() {
    // Octaves above 0 take intervals 0 and 1 from the octave before (F32); the fill computes
    // only intervals 2 and 3, in bands of 7 rows. The maps must equal a full fill bit for bit and
    // the keypoints those of `detect`, for both sample steps and up to 6 octaves.
    let img = boat(2);
    let ii = img.ii();
    let columns_len = column_scratch_len(ii.width());
    for (precision, step, octaves) in [
        (Precision::F32, 2, 4),
        (Precision::F32, 1, 6),
        (Precision::Packed8, 2, 4),
    ] {
        let config = SurfConfig {
            precision,
            init_sample_step: step,
            octaves,
            ..SurfConfig::default()
        };
        let words = if precision == Precision::F32 { 4 } else { 1 };
        let (expected, expected_stats) = detect_vec(&img, &config);
        assert!(expected.len() > 100);
        let mut scratch = vec![0u32; scratch_len(&config, ii.width(), ii.height()).unwrap()];
        let mut storage = vec![Keypoint::default(); 200_000];
        let mut sink = KeypointBuffer::new(&mut storage);
        let mut columns = vec![0u32; columns_len];
        let mut firsts = Vec::new();
        let mut maps_seen = Vec::new();
        let mut strategy = FillWith {
            band: 0,
            fill: |fill: &OctaveFill<'_>, _rows: core::ops::Range<usize>, maps: &mut [u32]| {
                let (o, from) = (fill.octave(), fill.first_interval());
                let (gw, gh) = fill.grid();
                firsts.push(from);
                let band = 7;
                for (k, chunk) in maps.chunks_mut(band * gw * words).enumerate() {
                    let rows = k * band..(k * band + band).min(gh);
                    fill_octave_rows_with_columns_from(
                        &ii,
                        &config,
                        o,
                        rows,
                        chunk,
                        &mut columns,
                        from,
                    )?;
                }
                maps_seen.push(maps.to_vec());
                Ok(())
            },
        };
        let stats =
            detect_with_strategy(&ii, &config, &mut scratch, &mut sink, &mut strategy).unwrap();
        assert_eq!(sink.points(), &expected[..], "{precision:?} step {step}");
        assert_eq!(stats, expected_stats, "{precision:?} step {step}");
        // Every octave's maps as a full fill leaves them.
        for (o, seen) in maps_seen.iter().enumerate() {
            let (gw, gh) = grid_size(ii.width(), ii.height(), sample_step(&config, o as u32));
            let mut full = vec![0u32; gw * gh * words];
            fill_octave_rows(&ii, &config, o as u32, 0..gh, &mut full).unwrap();
            assert!(seen == &full, "{precision:?} step {step} octave {o}");
        }
        // The sharing really ran: F32 octaves above 0 were filled from interval 2.
        let shared = if precision == Precision::F32 { 2 } else { 0 };
        assert_eq!(firsts[0], 0);
        assert!(firsts.len() >= 3);
        assert!(firsts[1..].iter().all(|&f| f == shared), "{firsts:?}");
    }
}

#[test]
fn banded_fill_and_scan_gives_the_keypoints_of_detect() {
    // Each octave filled in bands, each band's complete rows scanned at once into the frame's
    // sink: the keypoints arrive interleaved across intervals, yet the kept set, its order and
    // the counts must be `detect`'s, for any band height (1 row, a few, more than the grid), with
    // a sink large enough for all and with one that keeps only the strongest 40.
    let img = boat(2);
    let ii = img.ii();
    let mut columns = vec![0u32; column_scratch_len(ii.width())];
    for (precision, step, octaves) in [
        (Precision::F32, 2, 4),
        (Precision::F32, 1, 6),
        (Precision::Packed8, 2, 4),
    ] {
        let config = SurfConfig {
            precision,
            init_sample_step: step,
            octaves,
            ..SurfConfig::default()
        };
        let words = if precision == Precision::F32 { 4 } else { 1 };
        let mut scratch = vec![0u32; scratch_len(&config, ii.width(), ii.height()).unwrap()];
        for capacity in [200_000, 40] {
            let mut storage = vec![Keypoint::default(); capacity];
            let expected = {
                let mut sink = KeypointBuffer::new(&mut storage);
                let stats = detect(&ii, &config, &mut scratch, &mut sink).unwrap();
                (sink.points().to_vec(), stats)
            };
            assert!(expected.0.len() >= 40.min(capacity));
            for band in [1, 3, 16, 10_000] {
                // Rows not filled yet read as the largest response: a row scanned before the
                // row below it is filled would lose its maxima.
                scratch.fill(f32::MAX.to_bits());
                let mut sink = KeypointBuffer::new(&mut storage);
                let mut fills: Vec<(u32, core::ops::Range<usize>, u32)> = Vec::new();
                let mut strategy = FillWith {
                    band,
                    fill: |fill: &OctaveFill<'_>,
                           rows: core::ops::Range<usize>,
                           maps: &mut [u32]| {
                        let (o, from) = (fill.octave(), fill.first_interval());
                        let (gw, _) = grid_size(ii.width(), ii.height(), sample_step(&config, o));
                        assert_eq!(maps.len(), rows.len() * gw * words);
                        fills.push((o, rows.clone(), from));
                        fill_octave_rows_with_columns_from(
                            &ii,
                            &config,
                            o,
                            rows,
                            maps,
                            &mut columns,
                            from,
                        )
                    },
                };
                let stats =
                    detect_with_strategy(&ii, &config, &mut scratch, &mut sink, &mut strategy)
                        .unwrap();
                let case = format!("{precision:?} step {step} band {band} capacity {capacity}");
                assert_eq!(sink.points(), &expected.0[..], "{case}");
                assert_eq!(stats, expected.1, "{case}");
                // The bands of each octave cover its grid rows in order, F32 octaves above 0
                // filled from interval 2 (their intervals 0 and 1 moved from the octave before).
                let mut next = (0u32, 0usize);
                for (o, rows, from) in &fills {
                    if *o != next.0 {
                        assert_eq!((*o, next.1 > 0), (next.0 + 1, true), "{case}");
                        next = (*o, 0);
                    }
                    assert_eq!(rows.start, next.1, "{case}");
                    let (_, gh) = grid_size(ii.width(), ii.height(), sample_step(&config, *o));
                    let band_rows = if words == 1 { gh } else { band.min(gh) };
                    assert_eq!(rows.end, (rows.start + band_rows).min(gh), "{case}");
                    let shared = precision == Precision::F32 && *o > 0;
                    assert_eq!(*from, if shared { 2 } else { 0 }, "{case}");
                    next.1 = rows.end;
                }
                assert!(next.0 >= 2, "{case}");
            }
        }
    }
}

#[test]
fn fill_from_interval_2_leaves_intervals_0_and_1() {
    let img = boat(1);
    let ii = img.ii();
    let config = SurfConfig::default();
    let (gw, gh) = grid_size(ii.width(), ii.height(), sample_step(&config, 1));
    let mut full = vec![0u32; gw * gh * 4];
    fill_octave_rows(&ii, &config, 1, 0..gh, &mut full).unwrap();
    let mut columns = vec![0u32; column_scratch_len(ii.width())];
    let sentinel = 0xdead_beef;
    let mut part = vec![sentinel; gw * gh * 4];
    fill_octave_rows_with_columns_from(&ii, &config, 1, 0..gh, &mut part, &mut columns, 2).unwrap();
    for (s, (p, f)) in part.chunks_exact(4).zip(full.chunks_exact(4)).enumerate() {
        assert_eq!(&p[..2], &[sentinel, sentinel], "sample {s}");
        assert_eq!(&p[2..], &f[2..], "sample {s}");
    }
    for bad in [1, 3, 4] {
        assert_eq!(
            fill_octave_rows_with_columns_from(
                &ii,
                &config,
                1,
                0..gh,
                &mut part,
                &mut columns,
                bad
            ),
            Err(SurfError::FirstInterval(bad))
        );
    }
}

#[test]
fn fill_octave_rows_checks_its_buffer() {
    let img = boat(1);
    let ii = img.ii();
    let config = SurfConfig::default();
    let (gw, _) = grid_size(ii.width(), ii.height(), sample_step(&config, 0));
    let mut short = vec![0u32; 3 * gw * 4 - 1];
    assert!(matches!(
        fill_octave_rows(&ii, &config, 0, 0..3, &mut short),
        Err(SurfError::ScratchLength { .. })
    ));
    assert!(matches!(
        fill_octave_rows(&ii, &config, 9, 0..3, &mut short),
        Err(SurfError::OctaveOutOfRange { .. })
    ));
}

/// Images of only 0 and 255, whose box sums reach the largest determinants a filter can give:
/// random pixels, and checkerboards whose squares match lobe sizes of the filters.
fn extreme_images() -> Vec<Owned> {
    let mut rng = StdRng::seed_from_u64(77);
    let (w, h) = (331, 263);
    let noise = (0..w * h)
        .map(|_| if rng.gen_bool(0.5) { 255 } else { 0 })
        .collect();
    let mut images = vec![Owned::new(noise, w, h)];
    for square in [5, 9, 17, 33, 65] {
        let board = (0..w * h)
            .map(|i| {
                if ((i % w) / square + (i / w) / square) % 2 == 0 {
                    255
                } else {
                    0
                }
            })
            .collect();
        images.push(Owned::new(board, w, h));
    }
    images
}

#[test]
fn column_sums_fill_the_same_bits_as_the_table_reads() {
    // Every octave, both initial sample steps and both precisions, on a real image, on noise
    // whose sizes leave partial borders, on a tiny one that every filter overhangs (border
    // samples clip the columns of the column sums, whose rows are clipped at the top and
    // bottom), and on 0/255 images with the largest determinants (the interior samples of
    // octaves 0-3 take the `f64` determinant, which must equal the `i64` one).
    let mut images = vec![
        boat(1),
        random_smooth_image(203, 157, 13),
        random_smooth_image(23, 19, 5),
    ];
    images.extend(extreme_images());
    for img in images {
        let ii = img.ii();
        let mut columns = vec![0u32; column_scratch_len(ii.width())];
        for (precision, init_sample_step) in [
            (Precision::F32, 2),
            (Precision::F32, 1),
            (Precision::Packed8, 2),
        ] {
            let config = SurfConfig {
                precision,
                init_sample_step,
                octaves: MAX_OCTAVES,
                ..SurfConfig::default()
            };
            let words = if precision == Precision::Packed8 {
                1
            } else {
                4
            };
            for o in 0..u32::from(MAX_OCTAVES) {
                let (gw, gh) = grid_size(ii.width(), ii.height(), sample_step(&config, o));
                let mut plain = vec![0u32; gw * gh * words];
                let mut fast = vec![1u32; gw * gh * words];
                fill_octave_rows(&ii, &config, o, 0..gh, &mut plain).unwrap();
                fill_octave_rows_with_columns_from(
                    &ii,
                    &config,
                    o,
                    0..gh,
                    &mut fast,
                    &mut columns,
                    0,
                )
                .unwrap();
                if let Some(i) = (0..plain.len()).find(|&i| plain[i] != fast[i]) {
                    panic!(
                        "{precision:?} step {init_sample_step} octave {o}, {}x{}: word {i} of {} \
                         (grid width {gw}): {} against {}",
                        ii.width(),
                        ii.height(),
                        plain.len(),
                        f32::from_bits(plain[i]),
                        f32::from_bits(fast[i])
                    );
                }
            }
        }
    }
}
