//! The fuzz entry points (one per target). Each turns arbitrary bytes into the arguments of one
//! public surfcl function, calls it, and checks the invariants its docs promise: an error or a
//! well-formed result, never a panic. A failed `assert!` here is a finding.
//!
//! Included verbatim by `tests/tests/robustness_regressions.rs`, so it must only use
//! `surfcl_core`, `surfcl_gpu` and `std`.

use std::path::Path;

use surfcl_core::describe::{describe_all, to_q7};
use surfcl_core::harris::{self, HarrisConfig, HarrisThreshold};
use surfcl_core::homography::Homography;
use surfcl_core::integral::integral_len;
use surfcl_core::matcher::{
    self, Match, MatchConfig, TrainBest, match_f32, match_q7, match_range_f32, merge_train_best,
    retain_mutual,
};
use surfcl_core::surf::{self, PackedResponses, Precision, SurfConfig};
use surfcl_core::{
    Descriptor, DescriptorQ7, GrayImage, IntegralImage, Keypoint, KeypointBuffer, KeypointSink,
};

/// Reads fixed-size values from the front of the input; past the end it yields zeros, so every
/// input, even empty, maps to some arguments.
pub struct Reader<'a> {
    data: &'a [u8],
}

impl<'a> Reader<'a> {
    /// A reader over `data`.
    pub fn new(data: &'a [u8]) -> Self {
        Self { data }
    }
    /// One byte (0 past the end).
    pub fn u8(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&b, rest)) => {
                self.data = rest;
                b
            }
            None => 0,
        }
    }
    /// Little-endian u16.
    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }
    /// Little-endian u32.
    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }
    /// Any f32 bit pattern (NaN, infinities, subnormals included).
    pub fn f32_bits(&mut self) -> f32 {
        f32::from_bits(self.u32())
    }
    /// A flag byte's low bit.
    pub fn bool(&mut self) -> bool {
        self.u8() & 1 == 1
    }
    /// The unread bytes.
    pub fn rest(self) -> &'a [u8] {
        self.data
    }
}

/// A `w x h` image filled by repeating `bytes` (zeros when empty).
fn fill(bytes: &[u8], w: usize, h: usize) -> Vec<u8> {
    if bytes.is_empty() {
        return vec![0; w * h];
    }
    bytes.iter().copied().cycle().take(w * h).collect()
}

/// Image size of the detector targets: up to 71 x 71 (octave 0 and 1 interiors at step 1, every
/// border case; larger images only make each run slower), 0 allowed.
fn dims(r: &mut Reader<'_>) -> (usize, usize) {
    (usize::from(r.u8() % 72), usize::from(r.u8() % 72))
}

/// A threshold: half the time a plausible one (0 to 0.0255), else any bit pattern.
fn threshold(r: &mut Reader<'_>) -> f32 {
    if r.bool() {
        f32::from(r.u8()) * 1e-4
    } else {
        r.f32_bits()
    }
}

/// Checks what `describe_all` promises: one descriptor per keypoint, unit length or all zero,
/// orientations finite.
fn check_descriptors(kps: &[Keypoint], descs: &[Descriptor]) {
    assert_eq!(kps.len(), descs.len());
    for (k, d) in kps.iter().zip(descs) {
        assert!(k.orientation.is_finite(), "orientation {k:?}");
        let n: f32 = d.iter().map(|v| v * v).sum();
        assert!(
            n == 0.0 || (n - 1.0).abs() < 1e-3,
            "descriptor norm^2 {n} for {k:?}"
        );
        let q = to_q7(d);
        assert!(q.iter().all(|&v| v != i8::MIN));
    }
}

/// SURF detection (both precisions) and description on an arbitrary small image and config.
pub fn surf_detect(data: &[u8]) {
    let mut r = Reader::new(data);
    let (w, h) = dims(&mut r);
    let config = SurfConfig {
        octaves: r.u8() % 8,
        init_sample_step: r.u8() % 4,
        threshold: threshold(&mut r),
        precision: Precision::F32,
        upright: r.bool(),
    };
    let capacity = usize::from(r.u8() % 64);
    let raw_len = r.bool();
    let rest = r.rest();
    // Either an exact buffer, or the raw bytes (a length mismatch must be an error).
    let pixels = if raw_len {
        rest.to_vec()
    } else {
        fill(rest, w, h)
    };
    let Ok(image) = GrayImage::new(&pixels, w, h) else {
        assert!(raw_len || w == 0 || h == 0);
        return;
    };
    let len = integral_len(w, h).expect("a GrayImage's size has an integral length");
    let mut table = vec![0u32; len];
    let ii = IntegralImage::compute(&image, &mut table).expect("integral of a valid image");

    let mut found: Vec<Vec<Keypoint>> = Vec::new();
    for precision in [Precision::F32, Precision::Packed8] {
        let config = SurfConfig {
            precision,
            ..config
        };
        let need = match surf::scratch_len(&config, w, h) {
            Ok(n) => n,
            Err(_) => {
                assert!(config.validate().is_err());
                let mut storage = vec![Keypoint::default(); capacity];
                let mut sink = KeypointBuffer::new(&mut storage);
                assert!(surf::detect(&ii, &config, &mut [], &mut sink).is_err());
                return;
            }
        };
        // A short scratch is refused, not indexed out of bounds.
        if need > 0 {
            let mut short = vec![0u32; need - 1];
            let mut storage = vec![Keypoint::default(); capacity];
            let mut sink = KeypointBuffer::new(&mut storage);
            assert!(surf::detect(&ii, &config, &mut short, &mut sink).is_err());
        }
        let mut scratch = vec![0u32; need];
        let mut storage = vec![Keypoint::default(); capacity];
        let mut sink = KeypointBuffer::new(&mut storage);
        let stats = surf::detect(&ii, &config, &mut scratch, &mut sink).expect("valid detect");
        let kps = sink.points();
        check_detected(kps, stats.kept, capacity);
        for k in kps {
            assert!(
                k.response >= config.threshold,
                "{k:?} below {}",
                config.threshold
            );
        }
        let mut kps = kps.to_vec();
        let mut descs = vec![[0.0f32; 64]; kps.len()];
        describe_all(&ii, &mut kps, config.upright, &mut descs).expect("one per keypoint");
        check_descriptors(&kps, &descs);
        found.push(sink.points().to_vec());
    }
    // Documented: Packed8 gives the same keypoints as F32.
    assert_eq!(found[0], found[1], "F32 and Packed8 keypoints differ");

    // The fixed-point path on the same input (overflow checks are on in the fuzz build): the same
    // contract, and Q7 descriptors in range.
    let need = surf::scratch_len_with(&config, w, h).expect("valid config (checked above)");
    let mut scratch = vec![0u32; need];
    let mut storage = vec![Keypoint::default(); capacity];
    let mut sink = KeypointBuffer::new(&mut storage);
    let stats = surf::detect_with::<surf::FixedPoint, _>(&ii, &config, &mut scratch, &mut sink)
        .expect("valid fixed-point detect");
    let kps = sink.points();
    check_detected(kps, stats.kept, capacity);
    let mut kps = kps.to_vec();
    let mut q7 = vec![[0i8; 64]; kps.len()];
    surfcl_core::fixed::describe_all_q7(&ii, &mut kps, config.upright, &mut q7)
        .expect("one per keypoint");
    for (k, d) in kps.iter().zip(&q7) {
        assert!(d.iter().all(|&q| q >= -127), "{d:?}");
        assert!(
            k.orientation >= 0.0 && k.orientation < std::f32::consts::TAU,
            "{k:?}"
        );
    }
}

/// The contract of a SURF detection into a sink of `capacity` points, whichever arithmetic found
/// them: no more points than fit, as many as the statistics say were `kept`, strongest first,
/// finite positions, positive scales and a Laplacian sign of +1 or -1.
fn check_detected(kps: &[Keypoint], kept: usize, capacity: usize) {
    assert!(kps.len() <= capacity);
    assert_eq!(kept, kps.len());
    assert!(kps.windows(2).all(|p| p[0].rank_cmp(&p[1]).is_le()));
    for k in kps {
        assert!(k.x.is_finite() && k.y.is_finite() && k.scale > 0.0, "{k:?}");
        assert!(k.laplacian == 1 || k.laplacian == -1);
    }
}

/// Harris detection and response map on an arbitrary small image and config.
pub fn harris_detect(data: &[u8]) {
    let mut r = Reader::new(data);
    let (w, h) = dims(&mut r);
    let k = if r.bool() {
        f32::from(r.u8()) / 1024.0
    } else {
        r.f32_bits()
    };
    let window = usize::from(r.u8() % 16);
    let threshold = match r.u8() % 4 {
        0 => HarrisThreshold::Absolute(r.f32_bits()),
        1 => HarrisThreshold::Absolute(f32::from(r.u8()) * 1e-6),
        2 => HarrisThreshold::Relative(r.f32_bits()),
        _ => HarrisThreshold::Relative(f32::from(r.u8()) / 255.0),
    };
    let config = HarrisConfig {
        k,
        window,
        threshold,
        descriptor_scale: if r.bool() { 2.0 } else { r.f32_bits() },
        subpixel: r.bool(),
    };
    let capacity = usize::from(r.u8() % 64);
    let pixels = fill(r.rest(), w, h);
    let Ok(image) = GrayImage::new(&pixels, w, h) else {
        assert!(w == 0 || h == 0);
        return;
    };
    let need = harris::scratch_len(w, h).expect("valid image has a scratch length");
    let mut scratch = vec![0i32; need];
    let mut storage = vec![Keypoint::default(); capacity];
    let mut sink = KeypointBuffer::new(&mut storage);
    match harris::detect(&image, &config, &mut scratch, &mut sink) {
        Err(_) => assert!(config.validate().is_err()),
        Ok(stats) => {
            assert!(config.validate().is_ok());
            let kps = sink.points();
            assert!(kps.len() <= capacity);
            assert_eq!(stats.kept, kps.len());
            for p in kps {
                assert!(p.x >= -0.5 && p.y >= -0.5, "{p:?}");
                assert!(
                    p.x <= w as f32 - 0.5 && p.y <= h as f32 - 0.5,
                    "{p:?} in {w}x{h}"
                );
                assert!(p.response.is_finite() && p.response > 0.0, "{p:?}");
            }
        }
    }
    if need > 0 {
        let mut short = vec![0i32; need - 1];
        let mut sink = KeypointBuffer::new(&mut storage);
        assert!(harris::detect(&image, &config, &mut short, &mut sink).is_err());
    }
    let mut map = vec![0.0f32; w * h];
    let ok = harris::response_map(&image, &config, &mut scratch, &mut map).is_ok();
    assert_eq!(ok, config.validate().is_ok());
    let mut wrong = vec![0.0f32; w * h + 1];
    assert!(harris::response_map(&image, &config, &mut scratch, &mut wrong).is_err());
}

/// The packed-response view over arbitrary words and (possibly huge) grid sizes.
pub fn packed_responses(data: &[u8]) {
    let mut r = Reader::new(data);
    let grid_w = r.u32() as usize;
    let grid_h = r.u32() as usize;
    let probes: Vec<(usize, usize, usize)> = (0..4)
        .map(|_| (r.u16() as usize, r.u16() as usize, usize::from(r.u8() % 6)))
        .collect();
    let words: Vec<u32> = r
        .rest()
        .chunks(4)
        .map(|c| {
            c.iter()
                .rev()
                .fold(0u32, |acc, &b| (acc << 8) | u32::from(b))
        })
        .collect();
    let Ok(view) = PackedResponses::new_checked(&words, grid_w, grid_h) else {
        assert!(grid_w.checked_mul(grid_h).is_none_or(|n| n > words.len()));
        return;
    };
    assert_eq!(view.words().len(), grid_w * grid_h);
    let mut extremes = probes;
    extremes.push((usize::MAX, usize::MAX, usize::MAX));
    extremes.push((grid_w, 0, 0));
    extremes.push((0, grid_h, 3));
    for (sx, sy, i) in extremes {
        let word = view.word(sx, sy);
        if sx >= grid_w || sy >= grid_h {
            assert_eq!(word, 0);
        } else {
            assert_eq!(word, words[sy * grid_w + sx]);
        }
        let code = view.code(sx, sy, i);
        assert!(code <= 127);
        let lap = view.laplacian(sx, sy, i);
        assert!(lap == 1 || lap == -1);
        if i >= 4 {
            assert_eq!(view.byte(sx, sy, i), 0);
        }
    }
}

/// One side of a matching call.
struct Side {
    kps: Vec<Keypoint>,
    f32: Vec<Descriptor>,
    q7: Vec<DescriptorQ7>,
}

fn side(r: &mut Reader<'_>, n: usize, raw_floats: bool) -> Side {
    let mut kps = Vec::with_capacity(n);
    let mut f32s = Vec::with_capacity(n);
    let mut q7s = Vec::with_capacity(n);
    for _ in 0..n {
        let lap = match r.u8() % 4 {
            0 => -1,
            1 => 1,
            2 => 0,
            _ => r.u8() as i8,
        };
        kps.push(Keypoint {
            laplacian: lap,
            response: 1.0,
            ..Keypoint::default()
        });
        let mut d = [0.0f32; 64];
        let mut q = [0i8; 64];
        // Few distinct bytes make near-ties (and exact ties) likely.
        for (v, qv) in d.iter_mut().zip(q.iter_mut()) {
            let b = r.u8();
            *v = f32::from(b as i8) / 128.0;
            *qv = b as i8;
        }
        if raw_floats {
            // Overwrite a few components with arbitrary bit patterns (NaN, inf, huge).
            for _ in 0..(r.u8() % 4) {
                let i = usize::from(r.u8() % 64);
                d[i] = r.f32_bits();
            }
        }
        f32s.push(d);
        q7s.push(q);
    }
    Side {
        kps,
        f32: f32s,
        q7: q7s,
    }
}

fn check_matches(matches: &[Match], n_query: usize, n_train: usize) {
    for m in matches {
        assert!(
            (m.query as usize) < n_query && (m.train as usize) < n_train,
            "{m:?}"
        );
    }
    assert!(
        matches.windows(2).all(|p| p[0].query < p[1].query),
        "one match per query, in order"
    );
}

/// The matcher (f32 incl. NaN/inf, Q7 incl. -128) on arbitrary descriptors and configs, and the
/// documented equivalence of split ranges + merge + `retain_mutual` with one call.
pub fn matcher(data: &[u8]) {
    let mut r = Reader::new(data);
    let nq = usize::from(r.u8() % 24);
    let nt = usize::from(r.u8() % 24);
    let config = MatchConfig {
        ratio: if r.bool() {
            f32::from(r.u8()) / 255.0
        } else {
            r.f32_bits()
        },
        sign_test: r.bool(),
        cross_check: r.bool(),
        max_distance: match r.u8() % 3 {
            0 => None,
            1 => Some(f32::from(r.u8()) / 64.0),
            _ => Some(r.f32_bits()),
        },
    };
    let raw_floats = r.bool();
    let mismatch = r.u8().is_multiple_of(8);
    let split = usize::from(r.u8());
    let query = side(&mut r, nq, raw_floats);
    let mut train = side(&mut r, nt, raw_floats);
    if mismatch {
        train.kps.push(Keypoint::default());
    }
    let best_len = matcher::scratch_len(train.f32.len());
    let mut best = vec![TrainBest::EMPTY; best_len];
    let mut out = vec![Match::default(); nq];
    let f = match_f32(
        &query.kps, &query.f32, &train.kps, &train.f32, &config, &mut best, &mut out,
    );
    let valid = config.validate().is_ok() && !mismatch;
    assert_eq!(
        f.is_ok(),
        valid,
        "{f:?} for {config:?}, mismatch {mismatch}"
    );
    let Ok(n) = f else {
        return;
    };
    assert!(n <= nq);
    check_matches(&out[..n], nq, nt);
    let single = out[..n].to_vec();

    // Split the queries in two ranges, as the CPU backend does on several threads.
    {
        let cut = split.min(nq);
        let mut best_a = vec![TrainBest::EMPTY; best_len];
        let mut best_b = vec![TrainBest::EMPTY; best_len];
        let mut out_a = vec![Match::default(); cut];
        let mut out_b = vec![Match::default(); nq - cut];
        let na = match_range_f32(
            &query.kps,
            &query.f32,
            0..cut,
            &train.kps,
            &train.f32,
            &config,
            &mut best_a,
            &mut out_a,
        )
        .expect("valid range");
        let nb = match_range_f32(
            &query.kps,
            &query.f32,
            cut..nq,
            &train.kps,
            &train.f32,
            &config,
            &mut best_b,
            &mut out_b,
        )
        .expect("valid range");
        let mut joined: Vec<Match> = out_a[..na].iter().chain(&out_b[..nb]).copied().collect();
        if config.cross_check {
            merge_train_best(&mut best_a, &best_b).expect("same lengths");
            let kept = retain_mutual(&mut joined, &best_a);
            joined.truncate(kept);
        }
        let same = joined.len() == single.len()
            && joined.iter().zip(&single).all(|(a, b)| {
                a.query == b.query
                    && a.train == b.train
                    && a.distance.to_bits() == b.distance.to_bits()
            });
        assert!(same, "split at {cut}: {joined:?} vs {single:?}");
    }
    // A range outside the queries is an error.
    let mut tiny = vec![Match::default(); 1];
    assert!(
        match_range_f32(
            &query.kps,
            &query.f32,
            0..nq + 1,
            &train.kps,
            &train.f32,
            &config,
            &mut best,
            &mut tiny,
        )
        .is_err()
    );

    let n = match_q7(
        &query.kps, &query.q7, &train.kps, &train.q7, &config, &mut best, &mut out,
    )
    .expect("valid q7 match");
    check_matches(&out[..n], nq, nt);
    let quantised: Vec<DescriptorQ7> = query.f32.iter().map(to_q7).collect();
    let tq: Vec<DescriptorQ7> = train.f32.iter().map(to_q7).collect();
    let n = match_q7(
        &query.kps, &quantised, &train.kps, &tq, &config, &mut best, &mut out,
    )
    .expect("valid q7 match");
    check_matches(&out[..n], nq, nt);
}

/// The CLI's image decoding (PNG, PGM/PPM, JPEG) from bytes.
pub fn image_decode(data: &[u8]) {
    if let Ok(img) = surfcl_cli::io::decode_gray(data, Path::new("fuzz-input")) {
        assert_eq!(img.pixels.len(), img.width * img.height);
        assert!(img.view().is_ok(), "{}x{}", img.width, img.height);
    }
}

/// Homography parsing (and projection of a few points with what parsed).
pub fn homography_parse(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if let Ok(h) = Homography::parse(&text) {
        assert!(h.0.iter().flatten().all(|v| v.is_finite()));
        for (x, y) in [
            (0.0, 0.0),
            (-1e30, 1e30),
            (f32::MAX, f32::MIN),
            (320.5, 240.5),
        ] {
            if let Some((px, py)) = h.project(x, y) {
                assert!(
                    !px.is_nan() && !py.is_nan(),
                    "{h:?} ({x}, {y}) -> ({px}, {py})"
                );
            }
        }
    }
}
