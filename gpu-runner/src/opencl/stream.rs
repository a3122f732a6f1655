//! Streaming: SURF or Harris on a sequence of frames, each matched against the previous one on
//! the device.
//!
//! A [`StreamPipeline`] owns a detector ([`Pipeline`] for SURF, [`HarrisPipeline`] for Harris
//! with upright SURF descriptors) and a [`GpuMatcher`] on one context, with three in-order
//! queues: the detector's, an upload queue and the matcher's. It keeps two pinned staging
//! buffers with two device input buffers (double buffering) and two device descriptor sets
//! (this frame's and the previous frame's).
//!
//! The host waits once per frame, for the detection results of frame `k`; everything else is
//! ordered on the device by events:
//! 1. read back the results of `k` (the only blocking wait);
//! 2. on the matcher queue: gather the descriptors of `k` from the result buffer into its
//!    descriptor set;
//! 3. on the detector queue: the kernels of `k + 1` (already uploaded), after the gather of `k`
//!    (they overwrite the result buffer the gather reads);
//! 4. on the matcher queue: the 2-NN of `k` against `k - 1` (both sets stay on the device),
//!    running beside the kernels of `k + 1`;
//! 5. on the host, while the device runs 3 and 4: the keypoints of `k`, then the 2-NN readback
//!    (3 words per keypoint) and the core's ratio/mutual decisions (as in [`GpuMatcher`]);
//! 6. copy frame `k + 2` into the staging buffer `k` used and start its upload.
//!
//! So the device always has the next frame's kernels queued when the host finishes a frame, and
//! the upload of a frame overlaps the kernels of the one before.
//!
//! A frame that cannot be processed (empty, larger than the pipeline's maximum) is reported as
//! an error for that frame and skipped: the stream goes on, and the next good frame is matched
//! against the last good one.

use std::time::Instant;

use ocl::flags::{CommandQueueProperties, MemFlags};
use ocl::{Buffer, Event, MemMap, Queue};
use surfcl_core::matcher::{Match, MatchConfig};
use surfcl_core::{Descriptor, GrayImage, Keypoint};

use super::enqueue::{map_staging, upload_async};
use super::harris::{HarrisPipeline, HarrisPipelineConfig};
use super::matcher::GpuMatcher;
use super::pipeline::{DetectOutput, Gpu, Pipeline, PipelineConfig, stage_timings};
use super::{OpenClError, Selected};
use crate::backend::StageTiming;

/// One processed frame of a stream.
#[derive(Debug, Clone, Default)]
pub struct StreamFrame {
    /// Position of the frame in the input sequence (skipped frames count).
    pub index: usize,
    /// Keypoints, strongest first (as [`Pipeline::detect`]).
    pub keypoints: Vec<Keypoint>,
    /// Unit-length descriptors, same order.
    pub descriptors: Vec<Descriptor>,
    /// Matches of this frame (query) against the previous good frame (train), with the
    /// semantics of `surfcl_core::matcher::match_f32`; empty for the first frame.
    pub matches: Vec<Match>,
    /// Index of the frame matched against, if any.
    pub previous: Option<usize>,
    /// Candidates found before the strongest-N selection.
    pub candidates: usize,
    /// Device time per stage (ms), in execution order (the upload ran on the upload queue,
    /// overlapped with the previous frame's kernels).
    pub timings: Vec<StageTiming>,
    /// Host wall time from the start of this frame's upload to its matches (ms).
    pub latency_ms: f64,
}

/// A frame a [`StreamPipeline`] takes: a [`GrayImage`] view, anything that gives one, or the
/// error of a frame that could not be had (reported for its index; the stream goes on).
pub trait StreamInput {
    /// The frame's pixels.
    fn frame(&self) -> Result<GrayImage<'_>, OpenClError>;
}

impl StreamInput for GrayImage<'_> {
    fn frame(&self) -> Result<GrayImage<'_>, OpenClError> {
        Ok(*self)
    }
}

impl<T: StreamInput, E: std::fmt::Display> StreamInput for Result<T, E> {
    fn frame(&self) -> Result<GrayImage<'_>, OpenClError> {
        match self {
            Ok(t) => t.frame(),
            Err(e) => Err(OpenClError::BadFrame(e.to_string())),
        }
    }
}

/// A frame whose upload has been started.
#[derive(Debug)]
struct Submitted {
    index: usize,
    slot: usize,
    width: usize,
    height: usize,
    upload: Event,
    started: Instant,
}

/// A frame whose kernels have been enqueued, with their events.
#[derive(Debug)]
struct Started {
    sub: Submitted,
    events: Vec<(&'static str, Event)>,
}

/// A frame taken from the input: its input index and its submission (or why it failed).
type Pending = (usize, Result<Submitted, OpenClError>);

/// What a stream detects with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StreamDetector {
    /// SURF (the [`Pipeline`] of this configuration).
    Surf(PipelineConfig),
    /// Harris corners with upright SURF-64 descriptors at the fixed scale (the
    /// [`HarrisPipeline`] of this configuration; `describe` must be on).
    Harris(HarrisPipelineConfig),
}

/// The detector of a stream.
// One per stream, never moved per frame: boxing would only add an indirection.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
enum Detector {
    Surf(Pipeline),
    Harris(HarrisPipeline),
}

impl Detector {
    fn gpu(&self) -> &Gpu {
        match self {
            Self::Surf(p) => p.gpu(),
            Self::Harris(p) => p.gpu(),
        }
    }

    fn max_size(&self) -> (usize, usize) {
        match self {
            Self::Surf(p) => (p.config().max_width, p.config().max_height),
            Self::Harris(p) => (p.config().max_width, p.config().max_height),
        }
    }

    fn max_keypoints(&self) -> usize {
        match self {
            Self::Surf(p) => p.config().max_keypoints,
            Self::Harris(p) => p.config().max_keypoints,
        }
    }

    fn device_bytes(&self) -> u64 {
        match self {
            Self::Surf(p) => p.device_bytes(),
            Self::Harris(p) => p.device_bytes(),
        }
    }

    fn device_name(&self) -> String {
        match self {
            Self::Surf(p) => p.device_name(),
            Self::Harris(p) => p.device_name(),
        }
    }

    fn check_size(&self, w: usize, h: usize) -> Result<(), OpenClError> {
        match self {
            Self::Surf(p) => p.check_size(w, h),
            Self::Harris(p) => p.check_size(w, h),
        }
    }

    fn enqueue_kernels(
        &mut self,
        input: &Buffer<u8>,
        w: usize,
        h: usize,
        wait: &[Event],
        events: &mut Vec<(&'static str, Event)>,
    ) -> Result<(), OpenClError> {
        match self {
            Self::Surf(p) => p.enqueue_kernels(Some(input), w, h, wait, events),
            Self::Harris(p) => p.enqueue_kernels(Some(input), w, h, wait, events),
        }
    }

    /// The candidates found, or `None` when the kernels must run again (a grown buffer).
    fn read_results(
        &mut self,
        events: &mut Vec<(&'static str, Event)>,
    ) -> Result<Option<usize>, OpenClError> {
        match self {
            Self::Surf(p) => p.read_results(events),
            Self::Harris(p) => p.read_results(events).map(Some),
        }
    }

    fn set_last_size(&mut self, w: usize, h: usize) {
        match self {
            Self::Surf(p) => p.set_last_size(w, h),
            Self::Harris(p) => p.set_last_size(w, h),
        }
    }

    fn output(&self, found: usize) -> Result<DetectOutput, OpenClError> {
        match self {
            Self::Surf(p) => p.output(found, &[], 0.0),
            Self::Harris(p) => p.output(found, &[], 0.0),
        }
    }

    fn result_buffer(&self) -> &Buffer<u32> {
        match self {
            Self::Surf(p) => p.result_buffer(),
            Self::Harris(p) => p.result_buffer(),
        }
    }

    fn queue(&self) -> &Queue {
        &self.gpu().queue
    }
}

/// The streaming pipeline (module docs).
#[derive(Debug)]
pub struct StreamPipeline {
    detector: Detector,
    matcher: GpuMatcher,
    match_config: MatchConfig,
    upload_queue: Queue,
    inputs: [Buffer<u8>; 2],
    staging: [MemMap<u8>; 2],
    /// The upload last started from each staging slot (waited for before reusing it).
    in_flight: [Option<Event>; 2],
    next_slot: usize,
    /// Device descriptors and signs of two frames: `sets[current]` and the other.
    sets: [(Buffer<f32>, Buffer<i8>); 2],
    /// The last good frame: (its set, keypoint count, input index).
    previous: Option<(usize, usize, usize)>,
    next_index: usize,
}

impl StreamPipeline {
    /// Makes a SURF streaming pipeline on the device chosen by `spec` (see [`super::open`]).
    pub fn open(
        spec: Option<&str>,
        config: PipelineConfig,
        matching: MatchConfig,
    ) -> Result<Self, OpenClError> {
        Self::open_detector(spec, StreamDetector::Surf(config), matching)
    }

    /// Makes a streaming pipeline with the given detector on the device chosen by `spec`.
    pub fn open_detector(
        spec: Option<&str>,
        detector: StreamDetector,
        matching: MatchConfig,
    ) -> Result<Self, OpenClError> {
        Self::new(super::select(spec)?, detector, matching)
    }

    fn new(
        selected: Selected,
        detector: StreamDetector,
        matching: MatchConfig,
    ) -> Result<Self, OpenClError> {
        matching
            .validate()
            .map_err(|e| OpenClError::Unsupported(format!("matcher configuration: {e}")))?;
        let gpu = Gpu::new(selected)?;
        let detector = match detector {
            StreamDetector::Surf(config) => Detector::Surf(Pipeline::new(gpu, config)?),
            StreamDetector::Harris(config) => {
                if !config.describe {
                    return Err(OpenClError::Unsupported(
                        "a Harris stream matches descriptors: `describe` must be on".into(),
                    ));
                }
                Detector::Harris(HarrisPipeline::new(gpu, config)?)
            }
        };
        let gpu = detector.gpu().clone();
        let matcher = GpuMatcher::new(gpu.with_second_queue("create matcher queue")?)?;
        let upload_queue = Queue::new(
            &gpu.context,
            gpu.selected.device,
            Some(CommandQueueProperties::new().profiling()),
        )
        .map_err(OpenClError::runtime("create upload queue"))?;
        let (max_width, max_height) = detector.max_size();
        let pixels = max_width * max_height;
        let ro = MemFlags::new().read_only();
        let pinned = MemFlags::new().alloc_host_ptr().read_write();
        let inputs = [
            gpu.buffer::<u8>("stream input", pixels, ro)?,
            gpu.buffer::<u8>("stream input", pixels, ro)?,
        ];
        let stage0 = gpu.buffer::<u8>("stream staging", pixels, pinned)?;
        let stage1 = gpu.buffer::<u8>("stream staging", pixels, pinned)?;
        let staging = [map_staging(&stage0)?, map_staging(&stage1)?];
        let n = detector.max_keypoints();
        let rw = MemFlags::new().read_write();
        let sets = [
            (
                gpu.buffer::<f32>("stream descriptors", 64 * n, rw)?,
                gpu.buffer::<i8>("stream signs", n, rw)?,
            ),
            (
                gpu.buffer::<f32>("stream descriptors", 64 * n, rw)?,
                gpu.buffer::<i8>("stream signs", n, rw)?,
            ),
        ];
        Ok(Self {
            detector,
            matcher,
            match_config: matching,
            upload_queue,
            inputs,
            staging,
            in_flight: [None, None],
            next_slot: 0,
            sets,
            previous: None,
            next_index: 0,
        })
    }

    /// The device, as "platform / device".
    pub fn device_name(&self) -> String {
        self.detector.device_name()
    }

    /// The largest frame (width, height) the stream takes.
    pub fn max_size(&self) -> (usize, usize) {
        self.detector.max_size()
    }

    /// Device memory of the stream: the detector's buffers plus the two inputs and the two
    /// descriptor sets (bytes; pinned staging is host memory and the matcher's 2-NN result
    /// buffer, 3 words per keypoint, is not counted).
    pub fn device_bytes(&self) -> u64 {
        let n = self.detector.max_keypoints() as u64;
        let (w, h) = self.detector.max_size();
        self.detector.device_bytes() + 2 * (w * h) as u64 + 2 * (64 * 4 * n + n)
    }

    /// Forgets the previous frame: the next frame is matched against nothing.
    pub fn reset(&mut self) {
        self.previous = None;
    }

    /// Checks a frame and starts its upload; the frame gets the next input index either way.
    fn submit(&mut self, frame: &GrayImage<'_>) -> Result<Submitted, OpenClError> {
        let index = self.next_index;
        self.next_index += 1;
        let (w, h) = (frame.width(), frame.height());
        if w == 0 || h == 0 {
            return Err(OpenClError::Unsupported("empty frame".into()));
        }
        self.detector.check_size(w, h)?;
        let started = Instant::now();
        let slot = self.next_slot;
        self.next_slot ^= 1;
        // The staging slot is rewritten only after its previous upload has completed.
        if let Some(ev) = self.in_flight[slot].take() {
            ev.wait_for()
                .map_err(|e| OpenClError::runtime("wait for upload")(e.into()))?;
        }
        let n = w * h;
        self.staging[slot][..n].copy_from_slice(frame.pixels());
        let mut upload = Event::empty();
        upload_async(
            &self.inputs[slot],
            &self.staging[slot][..n],
            &self.upload_queue,
            &mut upload,
        )?;
        self.upload_queue
            .flush()
            .map_err(OpenClError::runtime("flush upload queue"))?;
        self.in_flight[slot] = Some(upload.clone());
        Ok(Submitted {
            index,
            slot,
            width: w,
            height: h,
            upload,
            started,
        })
    }

    /// Takes the next frame of `frames` and submits it.
    fn submit_next<T: StreamInput>(
        &mut self,
        frames: &mut impl Iterator<Item = T>,
    ) -> Option<Pending> {
        let input = frames.next()?;
        let index = self.next_index;
        let submitted = match input.frame() {
            Ok(frame) => self.submit(&frame),
            Err(e) => {
                self.next_index += 1;
                Err(e)
            }
        };
        Some((index, submitted))
    }

    /// Enqueues the kernels of a submitted frame: they wait for its upload and for `after`
    /// (the gather of the frame before, which reads the result buffer they overwrite).
    fn start(&mut self, sub: Submitted, after: Option<&Event>) -> Result<Started, OpenClError> {
        let mut events = Vec::with_capacity(16);
        events.push(("upload", sub.upload.clone()));
        let mut wait = vec![sub.upload.clone()];
        wait.extend(after.cloned());
        self.detector.enqueue_kernels(
            &self.inputs[sub.slot],
            sub.width,
            sub.height,
            &wait,
            &mut events,
        )?;
        self.detector
            .queue()
            .flush()
            .map_err(OpenClError::runtime("flush queue"))?;
        Ok(Started { sub, events })
    }

    /// Starts a pending frame (if any) after `after`.
    fn start_pending(
        &mut self,
        pending: Option<Pending>,
        after: Option<&Event>,
    ) -> Option<(usize, Result<Started, OpenClError>)> {
        pending.map(|(index, sub)| (index, sub.and_then(|sub| self.start(sub, after))))
    }

    /// Waits for a started frame's detection, enqueues its gather and matching against the
    /// previous good frame on the matcher queue, starts `next` on the detector queue, and
    /// finishes the frame on the host while the device works. Returns the frame (which becomes
    /// the previous frame when good) and the started `next`.
    #[allow(clippy::type_complexity)]
    fn finish(
        &mut self,
        current: Started,
        next: Option<Pending>,
    ) -> (
        Result<StreamFrame, OpenClError>,
        Option<(usize, Result<Started, OpenClError>)>,
    ) {
        let Started { sub, mut events } = current;
        let found = loop {
            match self.detector.read_results(&mut events) {
                Ok(Some(found)) => break found,
                // The candidate buffer grew: run the frame's kernels again (its upload is done).
                Ok(None) => {
                    if let Err(e) = self.detector.enqueue_kernels(
                        &self.inputs[sub.slot],
                        sub.width,
                        sub.height,
                        &[],
                        &mut events,
                    ) {
                        return (Err(e), self.start_pending(next, None));
                    }
                }
                Err(e) => return (Err(e), self.start_pending(next, None)),
            }
        };
        self.detector.set_last_size(sub.width, sub.height);
        let n = found.min(self.detector.max_keypoints());
        let cur = match self.previous {
            Some((set, _, _)) => set ^ 1,
            None => 0,
        };
        // The gather first, then the next frame's kernels (the critical path: they wait only for
        // the gather), then the matching, which runs beside them on the matcher queue.
        let mut match_events = Vec::new();
        let gathered = self
            .matcher
            .gather(
                self.detector.result_buffer(),
                n,
                self.match_config.sign_test,
                (&self.sets[cur].0, &self.sets[cur].1),
                &mut match_events,
            )
            .and_then(|()| self.matcher.flush());
        let gather = match_events
            .iter()
            .find(|(name, _)| *name == "gather")
            .map(|(_, ev)| ev.clone());
        let next = self.start_pending(next, gather.as_ref());
        let enqueued = gathered
            .and_then(|()| match self.previous {
                Some((set, count, _)) => self.matcher.enqueue_device_f32(
                    (&self.sets[cur].0, &self.sets[cur].1, n),
                    (&self.sets[set].0, &self.sets[set].1, count),
                    &self.match_config,
                    &mut match_events,
                ),
                None => Ok(()),
            })
            .and_then(|()| self.matcher.flush());
        if let Err(e) = enqueued {
            return (Err(e), next);
        }
        let frame = self.complete(&sub, found, n, cur, events, match_events);
        (frame, next)
    }

    /// The host side of a frame whose matching is enqueued: keypoints, descriptors, matches.
    fn complete(
        &mut self,
        sub: &Submitted,
        found: usize,
        n: usize,
        cur: usize,
        events: Vec<(&'static str, Event)>,
        match_events: Vec<(&'static str, Event)>,
    ) -> Result<StreamFrame, OpenClError> {
        let out = self.detector.output(found)?;
        let mut timings = stage_timings(&events)?;
        let (matches, previous) = match self.previous {
            Some((_, count, index)) => {
                let m = self.matcher.finish_device_f32(
                    (n, count),
                    &self.match_config,
                    match_events,
                    &mut timings,
                )?;
                (m, Some(index))
            }
            None => {
                self.matcher.finish()?;
                timings.extend(stage_timings(&match_events)?);
                (Vec::new(), None)
            }
        };
        self.previous = Some((cur, n, sub.index));
        Ok(StreamFrame {
            index: sub.index,
            keypoints: out.keypoints,
            descriptors: out.descriptors,
            matches,
            previous,
            candidates: found,
            timings,
            latency_ms: sub.started.elapsed().as_secs_f64() * 1e3,
        })
    }

    /// Processes one frame: detection, description and matching against the previous good
    /// frame. A frame that fails is reported and leaves the previous frame unchanged.
    pub fn process(&mut self, frame: &GrayImage<'_>) -> Result<StreamFrame, OpenClError> {
        let mut result = Err(OpenClError::Unsupported("no frame".into()));
        self.run(std::iter::once(*frame), |_, r| {
            result = r;
            false
        });
        result
    }

    /// Processes a sequence of frames with the upload and the kernels of each frame overlapped
    /// with the work on the one before (module docs); calls `sink` once per input frame, in
    /// order, with its result or its error (bad frames are skipped and the stream goes on).
    /// Stops early only when `sink` returns `false`.
    pub fn run<I, F>(&mut self, frames: I, mut sink: F)
    where
        I: IntoIterator,
        I::Item: StreamInput,
        F: FnMut(usize, Result<StreamFrame, OpenClError>) -> bool,
    {
        let mut frames = frames.into_iter();
        let first = self.submit_next(&mut frames);
        let mut current = self.start_pending(first, None);
        let mut pending = self.submit_next(&mut frames);
        while let Some((index, started)) = current.take() {
            let result = match started {
                Ok(started) => {
                    let (result, next) = self.finish(started, pending.take());
                    current = next;
                    result
                }
                Err(e) => {
                    current = self.start_pending(pending.take(), None);
                    Err(e)
                }
            };
            // The frame just finished no longer needs its input slot: the one after next
            // uploads into it while the device runs the next frame.
            pending = self.submit_next(&mut frames);
            if !sink(index, result) {
                // Let the frames already enqueued finish before their buffers can be reused.
                let _ = self.detector.queue().finish();
                return;
            }
        }
    }
}
