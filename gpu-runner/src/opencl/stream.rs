//! Streaming: SURF on a sequence of frames, each matched against the previous one on the
//! device.
//!
//! A [`StreamPipeline`] owns a [`Pipeline`] and a [`GpuMatcher`] on one context and queue, two
//! pinned staging buffers with two device input buffers (double buffering), a second queue for
//! uploads and two device descriptor sets (this frame's and the previous frame's). For frame
//! `k`, [`StreamPipeline::run`] enqueues the kernels of `k` (waiting on its upload event), then
//! copies frame `k + 1` into the other staging buffer and starts its upload on the upload queue,
//! and only then waits for the results of `k`: the host copy and the transfer of `k + 1`
//! overlap the kernels of `k`. The descriptors of `k` are gathered on the device from the
//! result buffer and matched against those of `k - 1` there; only the 2-NN (3 words per
//! keypoint) come back, and the ratio/mutual decisions are the core's (as in [`GpuMatcher`]).
//!
//! A frame that cannot be processed (larger than the pipeline's maximum) is reported as an
//! error for that frame and skipped: the stream goes on, and the next good frame is matched
//! against the last good one.

use std::time::Instant;

use ocl::flags::{CommandQueueProperties, MemFlags};
use ocl::{Buffer, Event, MemMap, Queue};
use surfcl_core::matcher::{Match, MatchConfig};
use surfcl_core::{Descriptor, GrayImage, Keypoint};

use super::enqueue::{map_staging, upload_async};
use super::matcher::GpuMatcher;
use super::pipeline::{Gpu, Pipeline, PipelineConfig, stage_timings};
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

/// The streaming pipeline (module docs).
#[derive(Debug)]
pub struct StreamPipeline {
    pipeline: Pipeline,
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
    /// Makes a streaming pipeline on the device chosen by `spec` (see [`super::open`]).
    pub fn open(
        spec: Option<&str>,
        config: PipelineConfig,
        matching: MatchConfig,
    ) -> Result<Self, OpenClError> {
        Self::new(super::select(spec)?, config, matching)
    }

    fn new(
        selected: Selected,
        config: PipelineConfig,
        matching: MatchConfig,
    ) -> Result<Self, OpenClError> {
        matching
            .validate()
            .map_err(|e| OpenClError::Unsupported(format!("matcher configuration: {e}")))?;
        let pipeline = Pipeline::new(Gpu::new(selected)?, config)?;
        let gpu = pipeline.gpu().clone();
        let matcher = GpuMatcher::new(gpu.clone())?;
        let upload_queue = Queue::new(
            &gpu.context,
            gpu.selected.device,
            Some(CommandQueueProperties::new().profiling()),
        )
        .map_err(OpenClError::runtime("create upload queue"))?;
        let pixels = config.max_width * config.max_height;
        let ro = MemFlags::new().read_only();
        let pinned = MemFlags::new().alloc_host_ptr().read_write();
        let inputs = [
            gpu.buffer::<u8>("stream input", pixels, ro)?,
            gpu.buffer::<u8>("stream input", pixels, ro)?,
        ];
        let stage0 = gpu.buffer::<u8>("stream staging", pixels, pinned)?;
        let stage1 = gpu.buffer::<u8>("stream staging", pixels, pinned)?;
        let staging = [map_staging(&stage0)?, map_staging(&stage1)?];
        let n = config.max_keypoints;
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
            pipeline,
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

    /// The underlying per-frame pipeline.
    pub fn pipeline(&self) -> &Pipeline {
        &self.pipeline
    }

    /// Device memory of the stream: the pipeline's buffers plus the two inputs and the two
    /// descriptor sets (bytes; pinned staging is host memory and not counted).
    pub fn device_bytes(&self) -> u64 {
        let n = self.pipeline.config().max_keypoints as u64;
        let px = (self.pipeline.config().max_width * self.pipeline.config().max_height) as u64;
        self.pipeline.device_bytes() + 2 * px + 2 * (64 * 4 * n + n)
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
        self.pipeline.check_size(w, h)?;
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

    /// Enqueues the kernels of a submitted frame (they wait for its upload).
    fn start(
        &mut self,
        sub: &Submitted,
        events: &mut Vec<(&'static str, Event)>,
    ) -> Result<(), OpenClError> {
        events.push(("upload", sub.upload.clone()));
        self.pipeline.enqueue_kernels(
            Some(&self.inputs[sub.slot]),
            sub.width,
            sub.height,
            Some(&sub.upload),
            events,
        )?;
        self.pipeline
            .queue()
            .flush()
            .map_err(OpenClError::runtime("flush queue"))
    }

    /// Waits for a started frame's results, matches it against the previous good frame on the
    /// device and makes it the previous frame.
    fn finish(
        &mut self,
        sub: Submitted,
        mut events: Vec<(&'static str, Event)>,
    ) -> Result<StreamFrame, OpenClError> {
        let found = loop {
            if let Some(found) = self.pipeline.read_results(&mut events)? {
                break found;
            }
            // The candidate buffer grew: run the frame's kernels again (its upload is done).
            self.pipeline.enqueue_kernels(
                Some(&self.inputs[sub.slot]),
                sub.width,
                sub.height,
                None,
                &mut events,
            )?;
        };
        self.pipeline.set_last_size(sub.width, sub.height);
        let out = self.pipeline.output(found, &[], 0.0)?;
        let n = out.keypoints.len();
        let cur = match self.previous {
            Some((set, _, _)) => set ^ 1,
            None => 0,
        };
        let mut match_events = Vec::new();
        self.matcher.gather(
            self.pipeline.result_buffer(),
            n,
            self.match_config.sign_test,
            (&self.sets[cur].0, &self.sets[cur].1),
            &mut match_events,
        )?;
        let mut timings = stage_timings(&events)?;
        let (matches, previous) = match self.previous {
            Some((set, count, index)) => {
                let m = self.matcher.match_device_f32(
                    (&self.sets[cur].0, &self.sets[cur].1, n),
                    (&self.sets[set].0, &self.sets[set].1, count),
                    &self.match_config,
                    match_events,
                    &mut timings,
                )?;
                (m, Some(index))
            }
            None => {
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
        let sub = self.submit(frame)?;
        let mut events = Vec::with_capacity(16);
        self.start(&sub, &mut events)?;
        self.finish(sub, events)
    }

    /// Processes a sequence of frames with the upload of each frame overlapped with the work
    /// on the one before; calls `sink` once per input frame, in order, with its result or its
    /// error (bad frames are skipped and the stream goes on). Stops early only when `sink`
    /// returns `false`.
    pub fn run<'a, I, F>(&mut self, frames: I, mut sink: F)
    where
        I: IntoIterator<Item = GrayImage<'a>>,
        F: FnMut(usize, Result<StreamFrame, OpenClError>) -> bool,
    {
        let mut frames = frames.into_iter();
        // The frame whose upload is under way, or the error of a frame that failed to submit.
        let mut next = frames.next().map(|f| {
            let index = self.next_index;
            (index, self.submit(&f))
        });
        while let Some((index, submitted)) = next.take() {
            match submitted {
                Err(e) => {
                    if !sink(index, Err(e)) {
                        return;
                    }
                    next = frames.next().map(|f| {
                        let index = self.next_index;
                        (index, self.submit(&f))
                    });
                }
                Ok(sub) => {
                    let mut events = Vec::with_capacity(16);
                    let started = self.start(&sub, &mut events);
                    // Overlap: frame k + 1 is copied and its upload starts while the kernels of
                    // frame k run.
                    next = frames.next().map(|f| {
                        let index = self.next_index;
                        (index, self.submit(&f))
                    });
                    let result = started.and_then(|()| self.finish(sub, events));
                    if !sink(index, result) {
                        return;
                    }
                }
            }
        }
    }
}
