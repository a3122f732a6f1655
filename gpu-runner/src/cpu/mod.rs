//! The CPU reference backend: `surfcl-core` behind the [`Backend`] trait.
//!
//! The backend owns a [`rayon`] pool of `std::thread::available_parallelism()` threads (or
//! `RAYON_NUM_THREADS`, or the number given to [`CpuBackend::with_threads`]), started once, and
//! the hot loops compiled for the widest vector instructions the CPU has, chosen once
//! ([`simd`]). Every stage of a frame runs on the pool:
//! - [`detect`]: SURF's response maps filled and scanned in bands of rows (the core's
//!   `surf::detect_with_strategy`);
//! - [`describe`]: the Haar maps, then orientation and description in small runs of keypoints
//!   (their cost varies with the scale, so work stealing balances the threads);
//! - [`matching`]: the queries split into one range per thread.
//!
//! All give exactly the single-threaded result: every response sample, row scan, descriptor
//! and query is independent, and the matcher's range functions are made for it (see
//! `surfcl_core::matcher`, "Splitting the queries").
//!
//! Buffers (integral image, detector scratch, keypoint storage, Haar maps, Q7 copies, match
//! outputs) live in the struct and only grow: after the first frame of a given size and
//! capacity, nothing is allocated except the owned vectors of the returned [`Features`].

mod describe;
mod detect;
mod integral;
mod matching;
mod simd;
mod support;

use std::sync::Arc;
use std::time::Instant;

use rayon::prelude::*;
use surfcl_core::describe::to_q7;
use surfcl_core::haar_map::HaarCell;
use surfcl_core::integral::integral_len;
use surfcl_core::matcher::{Match, MatchConfig, TrainBest};
use surfcl_core::{
    Descriptor, DescriptorQ7, GrayImage, IntegralImage, Keypoint, KeypointBuffer, KeypointSink,
    harris, surf,
};

use crate::backend::{Backend, DescriptorKind, DetectParams, DetectorKind, Features, StageTiming};
use crate::error::Error;
use describe::{DescribeStage, MapTrials, SpatialOrder};
pub use describe::{HaarMapPolicy, MAP_TRIALS};
use detect::{DetectBuffers, PoolSorted, detect_surf};
use matching::{Sides, parallel_match};
use simd::Kernels;
use support::{ensure_len, ms_since, thread_count};

/// The CPU reference backend.
#[derive(Debug, Default)]
pub struct CpuBackend {
    /// The worker threads; `None` runs everything on the calling thread (one thread asked for,
    /// or a pool that could not be created).
    pool: Option<Arc<rayon::ThreadPool>>,
    /// The hot loops for this CPU.
    kernels: Kernels,
    integral: Vec<u32>,
    /// The table rows above each band of rows of the threaded integral image.
    integral_carries: Vec<u32>,
    surf_scratch: Vec<u32>,
    /// The column scratch and band outputs of detection.
    detect_buffers: DetectBuffers,
    harris_scratch: Vec<i32>,
    keypoints: Vec<Keypoint>,
    query_q7: Vec<DescriptorQ7>,
    train_q7: Vec<DescriptorQ7>,
    matches: Vec<Match>,
    train_best: Vec<Vec<TrainBest>>,
    spatial: SpatialOrder,
    /// The cells of the description's Haar maps, at `[half - 1]` (see [`haar_maps`]).
    haar_cells: Vec<Vec<HaarCell>>,
    /// Whether upright description reads Haar maps ([`HaarMapPolicy`]).
    map_policy: HaarMapPolicy,
    /// The timings behind [`HaarMapPolicy::Timed`].
    map_trials: MapTrials,
}

impl CpuBackend {
    /// A backend using all available CPU threads, or as many as the environment variable
    /// `RAYON_NUM_THREADS` says (a positive number; as for rayon's global pool).
    pub fn new() -> Self {
        let asked = std::env::var("RAYON_NUM_THREADS")
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .filter(|&n| n > 0);
        let threads = asked.unwrap_or_else(|| {
            std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
        });
        Self::with_threads(threads)
    }

    /// Sets whether upright description reads Haar maps ([`HaarMapPolicy`]; by default timed).
    pub fn set_haar_map_policy(&mut self, policy: HaarMapPolicy) {
        self.map_policy = policy;
        self.map_trials = MapTrials::default();
    }

    /// A backend using at most `threads` threads (at least 1) for detection, description and
    /// matching. Should the operating system refuse to start the threads, the backend runs on
    /// the calling thread alone (and says so in [`Backend::device`]).
    pub fn with_threads(threads: usize) -> Self {
        let pool = (threads > 1)
            .then(|| {
                rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .thread_name(|i| format!("surfcl-cpu-{i}"))
                    .build()
                    .ok()
            })
            .flatten()
            .map(Arc::new);
        Self {
            pool,
            ..Self::default()
        }
    }

    /// The number of threads the backend works on (1 without a pool).
    fn threads(&self) -> usize {
        thread_count(self.pool.as_deref())
    }
}

/// `descriptors` quantised to Q7 into `out` (replacing its contents), on `pool`'s threads.
fn quantise(
    descriptors: &[Descriptor],
    out: &mut Vec<DescriptorQ7>,
    pool: Option<&rayon::ThreadPool>,
) {
    out.clear();
    match pool {
        Some(pool) => pool.install(|| out.par_extend(descriptors.par_iter().map(to_q7))),
        None => out.extend(descriptors.iter().map(to_q7)),
    }
}

impl Backend for CpuBackend {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn device(&self) -> String {
        format!(
            "CPU reference ({} thread{}, {})",
            self.threads(),
            if self.threads() == 1 { "" } else { "s" },
            self.kernels.name
        )
    }

    fn detect(&mut self, image: &GrayImage<'_>, params: &DetectParams) -> Result<Features, Error> {
        let mut features = Features::default();
        self.detect_into(image, params, &mut features)?;
        Ok(features)
    }

    /// Refills `out`'s keypoint, descriptor and timing arrays in place: a caller that hands back
    /// the previous frame's `Features` gets no allocation (and no fresh, zero-filled pages: a
    /// 1920x1080 frame's descriptors are 1.5 MB) for them once they are large enough.
    fn detect_into(
        &mut self,
        image: &GrayImage<'_>,
        params: &DetectParams,
        out: &mut Features,
    ) -> Result<(), Error> {
        self.on_pool(|backend| backend.detect_and_describe(image, params, out))
    }

    fn match_features(
        &mut self,
        query: &Features,
        train: &Features,
        config: &MatchConfig,
        descriptor: DescriptorKind,
    ) -> Result<Vec<Match>, Error> {
        config.validate()?;
        let pool = self.pool.as_deref();
        let (out, train_best) = (&mut self.matches, &mut self.train_best);
        match descriptor {
            DescriptorKind::F32 => {
                let sides = Sides::new(query, train, &query.descriptors, &train.descriptors);
                parallel_match(sides, config, pool, out, train_best, self.kernels.match_f32)
            }
            DescriptorKind::Q7 => {
                quantise(&query.descriptors, &mut self.query_q7, pool);
                quantise(&train.descriptors, &mut self.train_q7, pool);
                let sides = Sides::new(query, train, &self.query_q7, &self.train_q7);
                parallel_match(sides, config, pool, out, train_best, self.kernels.match_q7)
            }
        }
    }
}

impl CpuBackend {
    /// Runs `work` inside the backend's pool (on the calling thread without one): the stages'
    /// parallel loops then start from one of the pool's threads, and the serial steps between
    /// them hand nothing to a thread outside the pool and back.
    fn on_pool<R: Send>(&mut self, work: impl FnOnce(&mut Self) -> R + Send) -> R {
        match self.pool.clone() {
            Some(pool) => pool.install(|| work(self)),
            None => work(self),
        }
    }

    /// [`Backend::detect_into`] on the calling thread, which [`Self::on_pool`] makes one of the
    /// pool's (otherwise each stage and octave would pay a wake-up to hand work to the pool).
    fn detect_and_describe(
        &mut self,
        image: &GrayImage<'_>,
        params: &DetectParams,
        out: &mut Features,
    ) -> Result<(), Error> {
        let upright = self.detect_stage(image, params, out)?;
        let (width, height) = (image.width(), image.height());
        let len = integral_len(width, height)?;
        // `detect_stage` sized the table; a short one would be refused here, not indexed.
        let table = self.integral.get(..len).unwrap_or_default();
        let ii = IntegralImage::from_table(table, width, height)?;
        let stage = DescribeStage {
            pool: self.pool.as_deref(),
            kernels: &self.kernels,
            policy: self.map_policy,
            trials: &mut self.map_trials,
            haar_cells: &mut self.haar_cells,
            spatial: &mut self.spatial,
        };
        stage.run(
            &ii,
            upright,
            &mut out.keypoints,
            &mut out.descriptors,
            &mut out.timings,
        )
    }

    /// Detects the keypoints of `image` without describing them: `out`'s keypoints (SURF's
    /// without orientation, as the detector gives them), timings (integral image and detection),
    /// size and drop count are refilled and its descriptors left empty. What
    /// [`Backend::detect_into`] does before orientation and description, for callers that need
    /// only positions and scales (and for counting the stages apart).
    pub fn detect_keypoints_into(
        &mut self,
        image: &GrayImage<'_>,
        params: &DetectParams,
        out: &mut Features,
    ) -> Result<(), Error> {
        self.on_pool(|backend| backend.detect_stage(image, params, out))?;
        out.descriptors.clear();
        Ok(())
    }

    /// The integral image and detection of [`Backend::detect_into`] into `out` (keypoints,
    /// timings, size, drop count; descriptors untouched), the integral image left in
    /// `self.integral`. Returns whether the keypoints are described upright.
    fn detect_stage(
        &mut self,
        image: &GrayImage<'_>,
        params: &DetectParams,
        out: &mut Features,
    ) -> Result<bool, Error> {
        params.validate()?;
        let (width, height) = (image.width(), image.height());
        let timings = &mut out.timings;
        timings.clear();

        let start = Instant::now();
        let len = integral_len(width, height)?;
        ensure_len(&mut self.integral, len);
        let ii = integral::compute(
            image,
            &mut self.integral[..len],
            self.pool.as_deref(),
            &mut self.integral_carries,
        )?;
        timings.push(StageTiming {
            name: "integral".into(),
            ms: ms_since(start),
        });

        let start = Instant::now();
        // A frame cannot have more keypoints than pixels (SURF keeps strict 3x3x3 maxima on
        // sampling grids, Harris 5x5 maxima), so a small frame never allocates the full
        // `max_keypoints` (up to `MAX_KEYPOINTS_LIMIT` records).
        let capacity = params.max_keypoints.min(width * height);
        ensure_len(&mut self.keypoints, capacity);
        let mut sink = PoolSorted {
            sink: KeypointBuffer::new(&mut self.keypoints[..capacity]),
            pool: self.pool.as_deref(),
        };
        let upright = match params.detector {
            DetectorKind::Surf => {
                let need = surf::scratch_len(&params.surf, width, height)?;
                ensure_len(&mut self.surf_scratch, need);
                detect_surf(
                    &ii,
                    &params.surf,
                    &mut self.surf_scratch[..need],
                    &mut sink,
                    self.pool.as_deref(),
                    &self.kernels,
                    &mut self.detect_buffers,
                )?;
                params.surf.upright
            }
            DetectorKind::Harris => {
                let need = harris::scratch_len(width, height)?;
                ensure_len(&mut self.harris_scratch, need);
                harris::detect(
                    image,
                    &params.harris,
                    &mut self.harris_scratch[..need],
                    &mut sink,
                )?;
                // Harris corners have no characteristic orientation: described upright at their
                // fixed scale.
                true
            }
        };
        sink.sort();
        let dropped = sink.dropped();
        out.keypoints.clear();
        out.keypoints.extend_from_slice(sink.points());
        timings.push(StageTiming {
            name: "detect".into(),
            ms: ms_since(start),
        });
        out.width = width;
        out.height = height;
        out.dropped = dropped;
        Ok(upright)
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::backend::DetectParams;
    use surfcl_core::describe::describe_all;

    /// Boat img1 (850x680: octave 0 has 340 grid rows, so several threads each get a band).
    fn boat() -> crate::io::OwnedGray {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/oxford-boat/img1.pgm");
        crate::io::load_gray(&path).unwrap()
    }

    /// Default SURF parameters (upright or not), at most 10000 keypoints.
    fn surf_params(upright: bool) -> DetectParams {
        DetectParams {
            detector: crate::backend::DetectorKind::Surf,
            surf: surf::SurfConfig {
                upright,
                ..surf::SurfConfig::default()
            },
            harris: harris::HarrisConfig::default(),
            max_keypoints: 10_000,
            descriptor: DescriptorKind::F32,
        }
    }

    /// The backend describes from the top of the image down and puts the results back: the
    /// output must be the core's, in the core's (strongest first) order, on one thread and many.
    #[test]
    fn spatial_order_gives_the_core_result_in_the_core_order() {
        let image = boat();
        let view = image.view().unwrap();
        let config = surf::SurfConfig::default();
        let mut table = vec![0u32; integral_len(view.width(), view.height()).unwrap()];
        let ii = IntegralImage::compute(&view, &mut table).unwrap();
        let mut scratch =
            vec![0u32; surf::scratch_len(&config, view.width(), view.height()).unwrap()];
        let mut storage = vec![Keypoint::default(); 10_000];
        let mut sink = KeypointBuffer::new(&mut storage);
        surf::detect(&ii, &config, &mut scratch, &mut sink).unwrap();
        let mut expected = sink.points().to_vec();
        let mut descriptors = vec![[0.0; 64]; expected.len()];
        describe_all(&ii, &mut expected, false, &mut descriptors).unwrap();
        // Strongest first is not top to bottom: otherwise this test would not test the order.
        assert!(expected.windows(2).any(|w| w[0].y > w[1].y));
        let params = DetectParams {
            detector: crate::backend::DetectorKind::Surf,
            surf: config,
            harris: harris::HarrisConfig::default(),
            max_keypoints: 10_000,
            descriptor: DescriptorKind::F32,
        };
        for threads in [1, 3] {
            let got = CpuBackend::with_threads(threads)
                .detect(&view, &params)
                .unwrap();
            assert_eq!(got.keypoints, expected, "{threads} threads");
            assert_eq!(got.descriptors, descriptors, "{threads} threads");
        }
    }

    #[test]
    fn threaded_detection_equals_one_thread() {
        let image = boat();
        // A cap below the keypoint count too: what the sink keeps then depends on what the
        // banded scan offered it.
        for (precision, max_keypoints) in [
            (surf::Precision::F32, 10_000),
            (surf::Precision::Packed8, 10_000),
            (surf::Precision::F32, 500),
        ] {
            let params = DetectParams {
                detector: crate::backend::DetectorKind::Surf,
                surf: surf::SurfConfig {
                    precision,
                    ..surf::SurfConfig::default()
                },
                harris: harris::HarrisConfig::default(),
                max_keypoints,
                descriptor: DescriptorKind::F32,
            };
            let one = CpuBackend::with_threads(1)
                .detect(&image.view().unwrap(), &params)
                .unwrap();
            let many = CpuBackend::with_threads(5)
                .detect(&image.view().unwrap(), &params)
                .unwrap();
            assert!(one.keypoints.len() >= 500, "{precision:?}");
            assert_eq!(one.dropped > 0, max_keypoints == 500, "{precision:?}");
            assert_eq!(one.keypoints, many.keypoints, "{precision:?}");
            assert_eq!(one.descriptors, many.descriptors, "{precision:?}");
            assert_eq!(one.dropped, many.dropped);
        }
    }

    /// One, two and seven threads (more than this machine may have cores) give the same frame,
    /// bit for bit and in the same order: keypoints, descriptors and drop count, oriented and
    /// upright, `f32` maps (the shared intervals copied aside) and packed ones, with and
    /// without a cap that drops keypoints, frame after frame into the same `Features`.
    #[test]
    fn one_two_and_seven_threads_give_the_same_frame() {
        let image = boat();
        let view = image.view().unwrap();
        let mut cases = Vec::new();
        for (upright, precision, max_keypoints) in [
            (false, surf::Precision::F32, 10_000),
            (true, surf::Precision::F32, 10_000),
            (false, surf::Precision::Packed8, 10_000),
            (false, surf::Precision::F32, 700),
        ] {
            let mut params = surf_params(upright);
            params.surf.precision = precision;
            params.max_keypoints = max_keypoints;
            cases.push(params);
        }
        let mut backends: Vec<CpuBackend> = [1, 2, 7]
            .map(CpuBackend::with_threads)
            .into_iter()
            .collect();
        let mut frames = vec![Features::default(); backends.len()];
        for params in &cases {
            for (backend, frame) in backends.iter_mut().zip(&mut frames) {
                backend.detect_into(&view, params, frame).unwrap();
            }
            let one = &frames[0];
            assert!(one.keypoints.len() >= 700, "{params:?}");
            assert_eq!(one.dropped > 0, params.max_keypoints == 700, "{params:?}");
            for (frame, threads) in frames.iter().zip([1, 2, 7]).skip(1) {
                assert_eq!(
                    frame.keypoints, one.keypoints,
                    "{threads} threads, {params:?}"
                );
                assert_eq!(frame.descriptors, one.descriptors, "{threads} threads");
                assert_eq!(frame.dropped, one.dropped, "{threads} threads");
            }
        }
    }

    /// Detection alone gives the keypoints `detect` describes (upright: the same records; with
    /// orientation: the same points before their angle), and no descriptors, on one thread and
    /// several, into a previous frame's `Features`.
    #[test]
    fn detect_keypoints_into_gives_the_points_detect_describes() {
        let image = boat();
        let view = image.view().unwrap();
        for upright in [true, false] {
            let params = surf_params(upright);
            for threads in [1, 2] {
                let mut backend = CpuBackend::with_threads(threads);
                let described = backend.detect(&view, &params).unwrap();
                let mut reused = described.clone();
                backend
                    .detect_keypoints_into(&view, &params, &mut reused)
                    .unwrap();
                assert!(reused.descriptors.is_empty());
                assert_eq!(reused.keypoints.len(), described.keypoints.len());
                assert_eq!((reused.width, reused.height), (view.width(), view.height()));
                assert_eq!(reused.dropped, described.dropped);
                for (bare, full) in reused.keypoints.iter().zip(&described.keypoints) {
                    assert_eq!(bare.orientation, 0.0);
                    let angle_cleared = Keypoint {
                        orientation: 0.0,
                        ..*full
                    };
                    assert_eq!(*bare, angle_cleared, "upright {upright}, {threads} threads");
                }
                if !upright {
                    assert!(described.keypoints.iter().any(|k| k.orientation != 0.0));
                }
            }
        }
    }

    /// `detect_into` refills a previous frame's arrays (longer ones, from a larger frame with
    /// more keypoints, and shorter ones) and gives what `detect` gives, every field.
    #[test]
    fn detect_into_reuses_a_previous_frame_and_equals_detect() {
        let image = boat();
        let view = image.view().unwrap();
        // The top-left 320x240 of boat: fewer keypoints than the whole frame.
        let small = crate::io::OwnedGray {
            width: 320,
            height: 240,
            pixels: (0..240)
                .flat_map(|y| image.pixels[y * image.width..][..320].iter().copied())
                .collect(),
        };
        let params = surf_params;
        for threads in [1, 2] {
            let mut backend = CpuBackend::with_threads(threads);
            // The same stages in every frame (the timed policy alternates while it decides).
            backend.set_haar_map_policy(HaarMapPolicy::Always);
            let mut reused = Features::default();
            for (frame, upright) in [
                (&view, false),
                (&small.view().unwrap(), true),
                (&view, true),
            ] {
                let expected = backend.detect(frame, &params(upright)).unwrap();
                assert!(!expected.keypoints.is_empty());
                backend
                    .detect_into(frame, &params(upright), &mut reused)
                    .unwrap();
                assert_eq!(reused.keypoints, expected.keypoints, "{threads} threads");
                assert_eq!(
                    reused.descriptors, expected.descriptors,
                    "{threads} threads"
                );
                assert_eq!(
                    (reused.width, reused.height),
                    (expected.width, expected.height)
                );
                assert_eq!(reused.dropped, expected.dropped);
                let names =
                    |f: &Features| f.timings.iter().map(|t| t.name.clone()).collect::<Vec<_>>();
                assert_eq!(names(&reused), names(&expected));
            }
        }
    }
}
