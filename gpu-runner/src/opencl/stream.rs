//! Streaming: SURF or Harris on a sequence of frames, each matched against the previous one on
//! the device.
//!
//! A [`StreamPipeline`] owns a [`Detector`] (SURF, or Harris with upright SURF descriptors, as
//! [`DetectorConfig`] says) and a [`GpuMatcher`] on one context, with three in-order
//! queues: the detector's, an upload queue and the matcher's. It keeps two pinned staging
//! buffers with two device input buffers (double buffering) and three device descriptor sets.
//!
//! The device always has the next frames queued: for frame `k` the detector queue holds its
//! kernels, the gather of its descriptors into a device descriptor set (the count is read on
//! the device) and a non-blocking readback of its results into one of two pinned staging
//! areas. When the host turns to frame `k`, frame `k + 1` is already queued behind it. Then:
//! 1. wait for the readback of `k` (the only wait on the detector queue) and take its
//!    keypoints and descriptors from the staging area;
//! 2. on the matcher queue: the 2-NN of `k` against the previous good frame (both descriptor
//!    sets stay on the device), running beside the kernels of `k + 1`; `k` becomes the
//!    previous frame;
//! 3. copy frame `k + 2` into the input staging buffer `k` used, start its upload on the upload
//!    queue and queue its kernels, gather (into the set of the frame before `k`, after the
//!    matching of `k` that reads it) and readback (into the area of `k`) behind `k + 1`, so
//!    that the device has two frames to work on while the host waits;
//! 4. the 2-NN readback of `k` (3 words per keypoint) and the core's ratio/mutual decisions
//!    (as in [`GpuMatcher`]). Should that readback fail (a device error), the frame fails and
//!    the next one is matched against nothing: the frame before `k` has been overwritten.
//!
//! Three descriptor sets rotate so that a gather never overwrites the set of the previous good
//! frame or of the frame in flight, and it waits for the last matching that read its set. The
//! readback takes the header and as many records as recent frames had (plus a margin); a frame
//! with more, or one whose candidates overflowed (the buffer then grows), is run again with a
//! blocking readback after the queues drain, and so is the frame queued behind it: rare, and
//! the results are the same.
//!
//! A frame that cannot be processed (empty, larger than the pipeline's maximum) is reported as
//! an error for that frame and skipped: the stream goes on, and the next good frame is matched
//! against the last good one.

use std::time::Instant;

use ocl::flags::MemFlags;
use ocl::{Buffer, Event, Queue};
use surfcl_core::matcher::{Match, MatchConfig};
use surfcl_core::{Descriptor, GrayImage, Keypoint};

use super::detector::{Detector, DetectorConfig};
use super::device::{Selected, select};
use super::enqueue::Staging;
use super::error::OpenClError;
use super::frame::{DetectOutput, Events, Launch, read_results, readback_hint};
use super::gpu::Gpu;
use super::matcher::GpuMatcher;
use super::record::{HEADER_WORDS, Header, readback_words};
use super::surf::SurfPipelineConfig;
use crate::backend::StageTiming;

/// One processed frame of a stream.
#[derive(Debug, Clone, Default)]
pub struct StreamFrame {
    /// Position of the frame in the input sequence (skipped frames count).
    pub index: usize,
    /// Keypoints, strongest first (as [`Detector::detect`]).
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

impl StreamInput for crate::gray::OwnedGray {
    fn frame(&self) -> Result<GrayImage<'_>, OpenClError> {
        self.view()
            .map_err(|e| OpenClError::BadFrame(e.to_string()))
    }
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

impl Submitted {
    /// The frame's launch from its input slot, after `wait`.
    fn launch<'a>(&self, inputs: &'a [Buffer<u8>; 2], wait: &'a [Event]) -> Launch<'a> {
        Launch {
            input: Some(&inputs[self.slot]),
            width: self.width,
            height: self.height,
            wait,
            split: None,
        }
    }
}

/// A frame whose kernels, gather and readback have been enqueued.
#[derive(Debug)]
struct Started {
    sub: Submitted,
    /// Events of the upload, kernels, gather and readback, in order.
    events: Vec<(&'static str, Event)>,
    /// Its descriptor set (`0..3`).
    set: usize,
    /// Its result staging area (`0..2`).
    out_slot: usize,
    /// Records its readback takes.
    guess: usize,
}

/// A frame taken from the input: its input index and its submission (or why it failed).
type Pending = (usize, Result<Submitted, OpenClError>);

/// A frame between [`StreamPipeline::detect_and_match`] and [`StreamPipeline::complete`]: its
/// detection, and its matching on the matcher queue, if there was a previous frame.
struct Matching {
    sub: Submitted,
    out: DetectOutput,
    found: usize,
    kept: usize,
    timings: Vec<StageTiming>,
    /// The previous frame's input index and keypoint count, and the matching's events.
    against: Option<(usize, usize, Events)>,
}

/// The streaming pipeline (module docs).
#[derive(Debug)]
pub struct StreamPipeline {
    detector: Detector,
    /// The detector's queue (kernels, gathers and readbacks).
    queue: Queue,
    matcher: GpuMatcher,
    match_config: MatchConfig,
    upload_queue: Queue,
    inputs: [Buffer<u8>; 2],
    /// Pinned upload staging of each input (it waits for its last upload before the host
    /// writes it again).
    staging: [Staging<u8>; 2],
    next_slot: usize,
    /// Pinned staging areas for the result readbacks of two frames.
    results: [Staging<u32>; 2],
    /// Device descriptors and signs of three frames (module docs).
    sets: [(Buffer<f32>, Buffer<i8>); 3],
    /// The last matching that read each set (a gather into it waits for it).
    readers: [Option<Event>; 3],
    /// The last good frame: (its set, keypoint count, input index).
    previous: Option<(usize, usize, usize)>,
    next_index: usize,
    /// Records kept by the last two finished frames (the next readback takes the larger plus
    /// a margin).
    last_kept: [usize; 2],
    /// Frames run again on the slow path (module docs).
    reruns: usize,
}

impl StreamPipeline {
    /// Makes a SURF streaming pipeline on the device chosen by `spec` (an index or a name
    /// substring, see `opencl::open`).
    pub fn open(
        spec: Option<&str>,
        config: SurfPipelineConfig,
        matching: MatchConfig,
    ) -> Result<Self, OpenClError> {
        Self::open_detector(spec, DetectorConfig::Surf(config), matching)
    }

    /// Makes a streaming pipeline with the given detector on the device chosen by `spec`.
    pub fn open_detector(
        spec: Option<&str>,
        detector: DetectorConfig,
        matching: MatchConfig,
    ) -> Result<Self, OpenClError> {
        Self::new(select(spec)?, detector, matching)
    }

    fn new(
        selected: Selected,
        config: DetectorConfig,
        matching: MatchConfig,
    ) -> Result<Self, OpenClError> {
        matching
            .validate()
            .map_err(|e| OpenClError::Unsupported(format!("matcher configuration: {e}")))?;
        if matches!(config, DetectorConfig::Harris(c) if !c.describe) {
            return Err(OpenClError::Unsupported(
                "a Harris stream matches descriptors: `describe` must be on".into(),
            ));
        }
        let gpu = Gpu::new(selected)?;
        let detector = Detector::new(gpu.clone(), config)?;
        let matcher = GpuMatcher::new(gpu.with_second_queue("create matcher queue")?)?;
        let upload_queue = gpu.new_queue("create upload queue")?;
        let (max_width, max_height) = config.max_size();
        let pixels = max_width * max_height;
        let ro = MemFlags::new().read_only();
        let inputs = [
            gpu.buffer::<u8>("stream input", pixels, ro)?,
            gpu.buffer::<u8>("stream input", pixels, ro)?,
        ];
        let staging = [
            Staging::new(&gpu, "stream staging", pixels)?,
            Staging::new(&gpu, "stream staging", pixels)?,
        ];
        let n = detector.kernels().io().max_keypoints;
        let words = readback_words(n);
        let results = [
            Staging::new(&gpu, "stream result staging", words)?,
            Staging::new(&gpu, "stream result staging", words)?,
        ];
        let rw = MemFlags::new().read_write();
        let set = || -> Result<(Buffer<f32>, Buffer<i8>), OpenClError> {
            Ok((
                gpu.buffer::<f32>("stream descriptors", 64 * n, rw)?,
                gpu.buffer::<i8>("stream signs", n, rw)?,
            ))
        };
        let sets = [set()?, set()?, set()?];
        Ok(Self {
            detector,
            queue: gpu.queue.clone(),
            matcher,
            match_config: matching,
            upload_queue,
            inputs,
            staging,
            next_slot: 0,
            results,
            sets,
            readers: [None, None, None],
            previous: None,
            next_index: 0,
            // The first frames read every record: no re-run while the stream warms up.
            last_kept: [n, n],
            reruns: 0,
        })
    }

    fn max_keypoints(&self) -> usize {
        self.detector.kernels().io().max_keypoints
    }

    /// The device, as "platform / device".
    pub fn device_name(&self) -> String {
        self.detector.device_name()
    }

    /// The largest frame (width, height) the stream takes.
    pub fn max_size(&self) -> (usize, usize) {
        self.detector.config().max_size()
    }

    /// Device memory of the stream: the detector's buffers plus the two inputs and the three
    /// descriptor sets (bytes; pinned staging is host memory and the matcher's 2-NN result
    /// buffer, 3 words per keypoint, is not counted).
    pub fn device_bytes(&self) -> u64 {
        let n = self.max_keypoints() as u64;
        let (w, h) = self.max_size();
        self.detector.device_bytes() + 2 * (w * h) as u64 + 3 * (64 * 4 * n + n)
    }

    /// How many frames so far were run a second time because their readback was too short or
    /// their candidates overflowed (module docs); a steady stream has none after its first frames.
    pub fn reruns(&self) -> usize {
        self.reruns
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
        self.detector.kernels().io().check_size(w, h)?;
        let started = Instant::now();
        let slot = self.next_slot;
        self.next_slot ^= 1;
        let n = w * h;
        // `host` waits for the slot's previous upload before it is rewritten.
        self.staging[slot].host()?[..n].copy_from_slice(frame.pixels());
        let mut upload = Event::empty();
        self.staging[slot].upload(
            &self.inputs[slot],
            0..n,
            &self.upload_queue,
            false,
            &mut upload,
        )?;
        self.upload_queue
            .flush()
            .map_err(OpenClError::runtime("flush upload queue"))?;
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

    /// Enqueues a submitted frame on the detector queue: kernels (after its upload), gather
    /// into a set that is neither the previous good frame's nor `in_flight`'s (after the last
    /// matching that read it), non-blocking readback into the staging area `in_flight` does
    /// not use.
    fn start(
        &mut self,
        sub: Submitted,
        in_flight: Option<(usize, usize)>,
    ) -> Result<Started, OpenClError> {
        let keep = [self.previous.map(|p| p.0), in_flight.map(|f| f.0)];
        let set = (0..3).find(|s| !keep.contains(&Some(*s))).unwrap_or(0);
        let out_slot = in_flight.map_or(0, |f| f.1 ^ 1);
        let guess = self.read_hint();
        let mut started = Started {
            sub,
            events: Vec::with_capacity(16),
            set,
            out_slot,
            guess,
        };
        self.enqueue_frame(&mut started)?;
        Ok(started)
    }

    /// Records the next readback takes: the larger count of the last two finished frames, plus
    /// a quarter and 64.
    fn read_hint(&self) -> usize {
        let kept = self.last_kept[0].max(self.last_kept[1]);
        readback_hint(kept, self.max_keypoints())
    }

    /// Enqueues (or enqueues again) everything of a started frame on the detector queue.
    fn enqueue_frame(&mut self, st: &mut Started) -> Result<(), OpenClError> {
        st.events.clear();
        st.events.push(("upload", st.sub.upload.clone()));
        let upload = [st.sub.upload.clone()];
        let frame = st.sub.launch(&self.inputs, &upload);
        self.detector.kernels_mut().enqueue(frame, &mut st.events)?;
        let reader: Vec<Event> = self.readers[st.set].iter().cloned().collect();
        self.gather_into(st.set, &reader, &mut st.events)?;
        let mut ev = Event::empty();
        self.results[st.out_slot].read_back(
            &self.detector.kernels().io().result,
            0..readback_words(st.guess),
            &self.queue,
            false,
            &[],
            &mut ev,
        )?;
        st.events.push(("readback", ev));
        self.queue
            .flush()
            .map_err(OpenClError::runtime("flush queue"))
    }

    /// Enqueues on the detector queue, after `wait`, the gather of the kept records of the
    /// result buffer into descriptor set `set`.
    fn gather_into(
        &mut self,
        set: usize,
        wait: &[Event],
        events: &mut Vec<(&'static str, Event)>,
    ) -> Result<(), OpenClError> {
        let n = self.max_keypoints();
        self.matcher.gather(
            &self.queue,
            &self.detector.kernels().io().result,
            n,
            self.match_config.sign_test,
            (&self.sets[set].0, &self.sets[set].1),
            wait,
            events,
        )
    }

    /// (set, readback area) of a started frame, for the frame started after it.
    fn in_flight(frame: &Option<(usize, Result<Started, OpenClError>)>) -> Option<(usize, usize)> {
        match frame {
            Some((_, Ok(s))) => Some((s.set, s.out_slot)),
            _ => None,
        }
    }

    /// Starts a pending frame (if any); `in_flight`: (set, staging area) of the frame before.
    fn start_pending(
        &mut self,
        pending: Option<Pending>,
        in_flight: Option<(usize, usize)>,
    ) -> Option<(usize, Result<Started, OpenClError>)> {
        pending.map(|(index, sub)| (index, sub.and_then(|sub| self.start(sub, in_flight))))
    }

    /// Waits for both queues (before re-running a frame, or when a stream stops early).
    fn drain(&self) -> Result<(), OpenClError> {
        self.queue
            .finish()
            .map_err(OpenClError::runtime("wait for queue"))?;
        self.matcher.finish()
    }

    /// Waits for a started frame's readback and returns its detection; on the rare slow path
    /// (more records than the readback took, or a candidate overflow) runs the frame again
    /// with blocking readbacks and enqueues `next` again.
    fn detection(
        &mut self,
        st: &mut Started,
        next: &mut Option<(usize, Result<Started, OpenClError>)>,
    ) -> Result<(usize, DetectOutput), OpenClError> {
        let stage = &self.results[st.out_slot].host()?[..readback_words(st.guess)];
        let kernels = self.detector.kernels_mut();
        let header: [u32; HEADER_WORDS] = *stage
            .first_chunk()
            .ok_or_else(|| OpenClError::Unsupported("readback shorter than a header".into()))?;
        let header = Header::of(&header)
            .ok_or_else(|| OpenClError::Unsupported("readback shorter than a header".into()))?;
        let found = header.candidates();
        let overflow = header.overflowed() || found > kernels.io().candidate_capacity;
        let kept = found.min(kernels.io().max_keypoints);
        if !overflow && kept <= st.guess && kernels.accept(header)? {
            kernels.io_mut().last_candidates = Some(found);
            let out = kernels.io().output_from(stage, found)?;
            return Ok((found, out));
        }
        // Slow path: everything queued behind this frame used the same result buffer.
        self.reruns += 1;
        self.drain()?;
        let kernels = self.detector.kernels_mut();
        let frame = st.sub.launch(&self.inputs, &[]);
        let found = loop {
            kernels.enqueue(frame, &mut st.events)?;
            if let Some(found) = read_results(kernels, &mut st.events)? {
                break found;
            }
        };
        let out = kernels.io_mut().output(found, &[], 0.0)?;
        self.gather_into(st.set, &[], &mut st.events)?;
        self.queue
            .finish()
            .map_err(OpenClError::runtime("wait for queue"))?;
        let kept = found.min(self.max_keypoints());
        self.last_kept = [kept, kept];
        if let Some((_, Ok(n))) = next.as_mut() {
            n.guess = self.read_hint();
            if let Err(e) = self.enqueue_frame(n)
                && let Some((i, _)) = next.take()
            {
                *next = Some((i, Err(e)));
            }
        }
        Ok((found, out))
    }

    /// The first half of finishing a started frame: its detection, then its matching against
    /// the previous good frame enqueued on the matcher queue (not waited for); the frame becomes
    /// the previous frame. [`Self::complete`] finishes it.
    fn detect_and_match(
        &mut self,
        mut st: Started,
        next: &mut Option<(usize, Result<Started, OpenClError>)>,
    ) -> Result<Matching, OpenClError> {
        let (found, out) = self.detection(&mut st, next)?;
        let n = found.min(self.max_keypoints());
        self.last_kept = [self.last_kept[1], n];
        self.detector.kernels_mut().io_mut().last_size = (st.sub.width, st.sub.height);
        let timings = self.detector.kernels().io().gpu.stage_timings(&st.events)?;
        let against = match self.previous {
            Some((set, count, index)) => {
                let mut match_events = Vec::new();
                self.matcher.enqueue_device_f32(
                    (&self.sets[st.set].0, &self.sets[st.set].1, n),
                    (&self.sets[set].0, &self.sets[set].1, count),
                    &self.match_config,
                    &mut match_events,
                )?;
                self.matcher.flush()?;
                if let Some((_, last)) = match_events.last() {
                    self.readers[st.set] = Some(last.clone());
                    self.readers[set] = Some(last.clone());
                }
                Some((index, count, match_events))
            }
            None => None,
        };
        self.previous = Some((st.set, n, st.sub.index));
        Ok(Matching {
            sub: st.sub,
            out,
            found,
            kept: n,
            timings,
            against,
        })
    }

    /// The second half: waits for the frame's matching and decides it on the host. When that
    /// fails (a device error), the next frame is matched against nothing.
    fn complete(&mut self, matching: Matching) -> Result<StreamFrame, OpenClError> {
        let Matching {
            sub,
            out,
            found,
            kept,
            mut timings,
            against,
        } = matching;
        let (matches, previous) = match against {
            Some((index, count, events)) => {
                let m = self
                    .matcher
                    .finish_device_f32((kept, count), &self.match_config, events, &mut timings)
                    .inspect_err(|_| {
                        // The frame fails, and the frame before it cannot take its place
                        // again: the frame after next has been gathered into that frame's
                        // descriptor set. The next frame starts a new sequence.
                        self.previous = None;
                    })?;
                (m, Some(index))
            }
            None => (Vec::new(), None),
        };
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

    /// Processes a sequence of frames with the next frame always queued on the device while
    /// the host finishes the current one (module docs); calls `sink` once per input frame, in
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
        let in_flight = Self::in_flight(&current);
        let second = self.submit_next(&mut frames);
        let mut next = self.start_pending(second, in_flight);
        while let Some((index, started)) = current.take() {
            // Frame k (`current`) and k + 1 (`next`) are on the device. Frame k's detection
            // and the enqueueing of its matching come first.
            let matching = started.and_then(|st| self.detect_and_match(st, &mut next));
            // Its input slot, readback area and the previous frame's descriptor set (once the
            // matching just enqueued has read it) are free now: frame k + 2 goes in before the
            // host waits for the matching, so the device has two frames to work on meanwhile.
            let in_flight = Self::in_flight(&next);
            let pending = self.submit_next(&mut frames);
            let after_next = self.start_pending(pending, in_flight);
            let result = matching.and_then(|m| self.complete(m));
            current = next;
            next = after_next;
            if !sink(index, result) {
                // Commands already queued must finish before their buffers can be reused.
                let _ = self.drain();
                return;
            }
        }
    }
}
