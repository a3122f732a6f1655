//! The detector seam of the OpenCL backend: what every detector on a device shares, and the one
//! place that chooses between them.
//!
//! A detector (SURF in `pipeline.rs`, Harris in `harris.rs`) is a set of kernels behind
//! [`DetectorKernels`]. Everything else about a frame is the same for all of them and lives
//! here, in [`FrameIo`] and [`run_frame`]: the size check, the upload (straight from the
//! caller's pixels), the readback of the result header and the kept records (sized from the
//! last frames, [`ReadHint`]; a second read only when a frame keeps more), the re-run after a
//! detector grew its buffers, and the output built from the records ([`super::record`]), into
//! the caller's arrays when it hands some back ([`Detector::detect_into`]).
//!
//! [`DetectorConfig`] says which detector and for what; [`DetectorConfig::open`] is the
//! registration (the backend, the streams and `surfcl bench` all open detectors through it),
//! and [`Detector`] is the public handle. A third detector is one new file implementing
//! [`DetectorKernels`] plus its variant here.

use std::time::Instant;

use ocl::flags::MemFlags;
use ocl::{Buffer, Event, Kernel, Program, Queue};
use surfcl_core::describe::ORIENTATION_GRID;
use surfcl_core::{Descriptor, GrayImage, Keypoint};

use super::OpenClError;
use super::enqueue::{Staging, launch_after};
use super::gpu::Gpu;
use super::harris::{HarrisPipeline, HarrisPipelineConfig};
use super::inject::{self, FaultPoint};
use super::pipeline::{Pipeline, PipelineConfig};
use super::record::{Header, Record, readback_words};
use crate::backend::{DetectParams, DetectorKind, MAX_KEYPOINTS_LIMIT, StageTiming};

/// The result of one frame.
#[derive(Debug, Clone, Default)]
pub struct DetectOutput {
    /// Keypoints, strongest first.
    pub keypoints: Vec<Keypoint>,
    /// Unit-length descriptors, same order (empty when the detector does not describe).
    pub descriptors: Vec<Descriptor>,
    /// Candidates found (after NMS and interpolation), before the strongest-N selection.
    pub candidates: usize,
    /// Candidates not kept because of `max_keypoints`.
    pub dropped: usize,
    /// Device time per stage from profiling events (ms), in execution order.
    pub timings: Vec<StageTiming>,
    /// Host wall time of the whole frame: upload, kernels and readback (ms).
    pub wall_ms: f64,
}

/// A kernel launch recorded for profiling: (stage name, event).
pub(crate) type Events = Vec<(&'static str, Event)>;

/// The per-frame plumbing every detector embeds: its device, input image and result buffers,
/// pinned readback staging, and the readback size hint.
#[derive(Debug)]
pub(crate) struct FrameIo {
    pub gpu: Gpu,
    pub max_width: usize,
    pub max_height: usize,
    pub max_keypoints: usize,
    /// Whether records carry descriptors worth reading.
    pub describe: bool,
    /// The frame's pixels (kernels read them from here unless a stream hands its own input).
    pub image: Buffer<u8>,
    /// Header and kept records (module [`super::record`]).
    pub result: Buffer<u32>,
    stage_out: Staging<u32>,
    /// Pinned host memory for a caller that writes frames there ([`Detector::input_buffer`]),
    /// made on first use.
    stage_in: Option<Staging<u8>>,
    read_hint: ReadHint,
    /// Blocking readbacks of the result buffer so far (tests check that a frame takes one).
    pub readbacks: u64,
    /// Size of the last frame (for the debugging readbacks).
    pub last_size: (usize, usize),
    /// Candidates the detector's candidate buffer holds now (set by the detector).
    pub candidate_capacity: usize,
    /// Device memory of all the detector's buffers, bytes (set by the detector).
    pub device_bytes: u64,
    /// Candidates of the last frame read back (sizes launches of the next one; never results).
    pub last_candidates: Option<usize>,
    /// A second in-order queue on the same device (`None` where it could not be made: then
    /// everything runs on the one queue): the first part of a readback travels on it while
    /// the rest of the descriptors are computed ([`Launch::split`]).
    transfer_queue: Option<Queue>,
    /// Set by the detector's `enqueue` when it described the first records apart
    /// ([`Launch::split`]): their count and the event after which they are complete.
    pub split_done: Option<(usize, Event)>,
}

/// Where a frame's kernels read and what they wait for.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Launch<'a> {
    /// The frame's pixels: [`FrameIo::image`] when `None`, else a stream's own input.
    pub input: Option<&'a Buffer<u8>>,
    pub width: usize,
    pub height: usize,
    /// Events (on other queues) the first kernel waits for.
    pub wait: &'a [Event],
    /// Describe the first this many records in a launch of their own and note its event in
    /// [`FrameIo::split_done`] (their readback then overlaps the rest of the descriptors);
    /// `None`: one launch.
    pub split: Option<usize>,
}

impl FrameIo {
    /// Checks the sizes and capacity the kernels rely on and allocates the shared buffers.
    pub(crate) fn new(
        gpu: Gpu,
        max_width: usize,
        max_height: usize,
        max_keypoints: usize,
        describe: bool,
    ) -> Result<Self, OpenClError> {
        surfcl_core::image::check_dimensions(max_width, max_height)
            .map_err(|e| OpenClError::Unsupported(e.to_string()))?;
        if max_keypoints == 0 || max_keypoints > MAX_KEYPOINTS_LIMIT {
            return Err(OpenClError::Unsupported(format!(
                "max_keypoints must be in 1..={MAX_KEYPOINTS_LIMIT}, got {max_keypoints}"
            )));
        }
        let pixels = max_width * max_height;
        let words = readback_words(max_keypoints);
        let image = gpu.buffer::<u8>("image", pixels, MemFlags::new().read_only())?;
        let result = gpu.buffer::<u32>("result", words, MemFlags::new().read_write())?;
        let stage_out = Staging::new(&gpu, "pinned readback staging", words)?;
        // Optional: without it every transfer runs on the detector's queue, as before.
        let transfer_queue = gpu.new_queue("create transfer queue").ok();
        Ok(Self {
            gpu,
            max_width,
            max_height,
            max_keypoints,
            describe,
            image,
            result,
            stage_out,
            stage_in: None,
            read_hint: ReadHint::default(),
            readbacks: 0,
            last_size: (0, 0),
            candidate_capacity: 0,
            device_bytes: 0,
            last_candidates: None,
            transfer_queue,
            split_done: None,
        })
    }

    /// Checks a frame against the maximum size.
    pub(crate) fn check_size(&self, width: usize, height: usize) -> Result<(), OpenClError> {
        if width > self.max_width || height > self.max_height {
            return Err(OpenClError::ImageTooLarge {
                width,
                height,
                max_width: self.max_width,
                max_height: self.max_height,
            });
        }
        Ok(())
    }

    /// The first `width * height` bytes of the pinned input area (made on first use, as large
    /// as the largest frame), after its last upload has completed.
    fn input_area(&mut self, width: usize, height: usize) -> Result<&mut [u8], OpenClError> {
        check_frame(width, height)?;
        self.check_size(width, height)?;
        let area = match self.stage_in.take() {
            Some(area) => area,
            None => Staging::new(
                &self.gpu,
                "pinned input staging",
                self.max_width * self.max_height,
            )?,
        };
        Ok(&mut self.stage_in.insert(area).host()?[..width * height])
    }

    /// Uploads the first `n` bytes of the pinned input area into [`Self::image`] without
    /// blocking (a DMA; the area waits for it before the host touches it again).
    fn upload_input(&mut self, n: usize, events: &mut Events) -> Result<(), OpenClError> {
        let area = self.stage_in.as_mut().ok_or_else(|| {
            OpenClError::Unsupported(
                "no frame in the pinned input area: write one through `input_buffer` first".into(),
            )
        })?;
        upload_pinned(area, &self.image, &self.gpu, n, events)
    }

    /// Uploads `image` into [`Self::image`] (blocking), straight from the caller's memory. The
    /// driver copies pageable memory through its own pinned buffers while the transfer runs;
    /// a copy into a pinned staging area first was slower end to end on an H100 (1920x1080:
    /// 0.698 ms a frame staged, 0.628 direct; 4000x3000: 2.71 against 2.26; `surfcl bench`,
    /// same run, docs/BENCHMARKS.md).
    ///
    /// The frame passed [`Self::check_size`] first, so it fits the buffer (and `ocl` refuses a
    /// longer write anyway).
    fn upload(&mut self, image: &GrayImage<'_>, events: &mut Events) -> Result<(), OpenClError> {
        inject::runtime(FaultPoint::Upload, "upload frame")?;
        let mut ev = Event::empty();
        self.image
            .write(image.pixels())
            .queue(&self.gpu.queue)
            .enew(&mut ev)
            .enq()
            .map_err(OpenClError::runtime("upload frame"))?;
        events.push(("upload", ev));
        Ok(())
    }

    /// Reads back (blocking) the records `from..to`, and the header too when `from` is 0.
    fn read_records(
        &mut self,
        from: usize,
        to: usize,
        events: &mut Events,
    ) -> Result<(), OpenClError> {
        let start = if from == 0 { 0 } else { readback_words(from) };
        self.read_words(start..readback_words(to), events)?;
        self.readbacks += 1;
        Ok(())
    }

    /// Reads back (blocking) the result words `words` on the detector's queue.
    fn read_words(
        &mut self,
        words: std::ops::Range<usize>,
        events: &mut Events,
    ) -> Result<(), OpenClError> {
        let mut ev = Event::empty();
        let queue = self.gpu.queue.clone();
        self.stage_out
            .read_back(&self.result, words, &queue, true, &[], &mut ev)?;
        events.push(("readback", ev));
        Ok(())
    }

    /// Reads back the header and the records `0..to` (blocking) in two parts: the header and
    /// the first `split` records, described first, on the transfer queue as soon as `described`
    /// (their descriptors' event) completes, while the detector's queue still describes the
    /// rest; then the rest on the detector's queue. One readback for [`Self::readbacks`].
    fn read_records_split(
        &mut self,
        split: usize,
        described: Event,
        to: usize,
        events: &mut Events,
    ) -> Result<(), OpenClError> {
        let Some(transfer) = self.transfer_queue.clone() else {
            return self.read_records(0, to, events);
        };
        let split = split.min(to);
        let mut ev = Event::empty();
        self.stage_out.read_back(
            &self.result,
            0..readback_words(split),
            &transfer,
            false,
            &[described],
            &mut ev,
        )?;
        events.push(("readback", ev));
        // Submitted now: the host blocks on the other queue next.
        transfer
            .flush()
            .map_err(OpenClError::runtime("flush transfer queue"))?;
        if split < to {
            self.read_words(readback_words(split)..readback_words(to), events)?;
        }
        // The caller reads the header through `host`, which waits for the first part too.
        self.stage_out.wait()?;
        self.readbacks += 1;
        Ok(())
    }

    /// Records to describe apart for a frame whose first readback takes `records`
    /// ([`Launch::split`]): `None` without a transfer queue or for small readbacks.
    fn describe_split(&self, records: usize) -> Option<usize> {
        self.transfer_queue.as_ref()?;
        (records >= SPLIT_MIN_RECORDS).then(|| records * SPLIT_NUM / SPLIT_DEN)
    }

    /// Notes that a frame kept `kept` records (sizes the next readbacks).
    pub(crate) fn note_kept(&mut self, kept: usize) {
        self.read_hint.note(kept);
    }

    /// The frame's output from a readback of the result buffer (`stage`: the header and at
    /// least the kept records), without timings (a stream times its frames itself).
    pub(crate) fn output_from(
        &self,
        stage: &[u32],
        found: usize,
    ) -> Result<DetectOutput, OpenClError> {
        let mut out = DetectOutput::default();
        records_into(stage, found, self.max_keypoints, self.describe, &mut out)?;
        Ok(out)
    }

    /// The output of the frame whose records [`read_results`] staged.
    pub(crate) fn output(
        &mut self,
        found: usize,
        events: &[(&'static str, Event)],
        wall_ms: f64,
    ) -> Result<DetectOutput, OpenClError> {
        let mut out = DetectOutput::default();
        self.output_into(found, events, wall_ms, &mut out)?;
        Ok(out)
    }

    /// [`Self::output`] into `out`, reusing the memory of its arrays.
    pub(crate) fn output_into(
        &mut self,
        found: usize,
        events: &[(&'static str, Event)],
        wall_ms: f64,
        out: &mut DetectOutput,
    ) -> Result<(), OpenClError> {
        let (max_keypoints, describe) = (self.max_keypoints, self.describe);
        let stage = self.stage_out.host()?;
        records_into(stage, found, max_keypoints, describe, out)?;
        out.timings = self.gpu.stage_timings(events)?;
        out.wall_ms = wall_ms;
        Ok(())
    }
}

/// A frame's output from a readback (`stage`: the header and at least the kept records), into
/// `out`: the first `min(found, max_keypoints)` records, with their descriptors when `describe`.
/// Its keypoint and descriptor arrays are cleared and refilled, so a caller that hands back an
/// earlier frame's arrays gets this frame's without allocating (and without touching fresh
/// pages: at 4096 keypoints the descriptors are 1 MiB, and a fresh allocation of that size can
/// come from pages the allocator returned to the system; 640x480 frames of 1020 keypoints built
/// their output in 29-33 us reused against 43-47 us fresh on the development machine). Every
/// field of `out` is set on success (no timings, a wall time of 0: the caller's to add); on
/// error its contents are unspecified.
fn records_into(
    stage: &[u32],
    found: usize,
    max_keypoints: usize,
    describe: bool,
    out: &mut DetectOutput,
) -> Result<(), OpenClError> {
    let kept = found.min(max_keypoints);
    if stage.len() < readback_words(kept) {
        return Err(OpenClError::Unsupported(format!(
            "{kept} records in a {}-word readback",
            stage.len()
        )));
    }
    let records = || Record::all(stage, kept);
    // Descriptors first: that pass reads the records from start to end (the readback has just
    // written them, so they are not in the cache yet), and the keypoint pass after it finds
    // them cached. Keypoints first read every record's first words at a 288-byte stride from
    // memory: 91-94 against 64-68 us for 4096 records, 23-31 against 13-22 us for 1020, on
    // the development machine (records not in the cache).
    out.descriptors.clear();
    if describe {
        out.descriptors.extend(records().map(Record::descriptor));
    }
    out.keypoints.clear();
    out.keypoints.extend(records().map(Record::keypoint));
    out.candidates = found;
    out.dropped = found - kept;
    out.timings.clear();
    out.wall_ms = 0.0;
    Ok(())
}

/// Records a readback takes after frames that kept at most `kept`: a quarter more and 64, so
/// that a second read is rare when the count grows.
pub(crate) fn readback_hint(kept: usize, max_keypoints: usize) -> usize {
    (kept + kept / 4 + 64).min(max_keypoints)
}

/// Frames whose kept counts size the next readback ([`ReadHint`]).
const HINT_FRAMES: usize = 4;

/// Records the first readback of a frame takes: [`readback_hint`] of the largest kept count of
/// the last [`HINT_FRAMES`] frames (256 before the first frame).
///
/// The largest, not the last: when frames alternate between scenes whose counts differ by more
/// than a quarter (two cameras on one topic, a camera panning over a textured and a plain
/// area, the node's latency test alternating two pictures), a hint from the last frame alone
/// is too small after every smaller frame, and the next larger one pays a second blocking
/// readback (a host-device round trip). Reading the unused records of a smaller frame costs
/// only their transfer (288 bytes a record) within the one readback.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ReadHint {
    /// Kept counts of the last frames (a ring; 0 where no frame was noted yet).
    recent: [usize; HINT_FRAMES],
    /// Where the next count goes in `recent`.
    next: usize,
    /// Whether a frame was noted.
    noted: bool,
}

impl ReadHint {
    /// Records the first readback takes before any frame was noted.
    const FIRST: usize = 256;

    /// Notes a frame that kept `kept` records.
    pub(crate) fn note(&mut self, kept: usize) {
        if let Some(slot) = self.recent.get_mut(self.next) {
            *slot = kept;
        }
        self.next = (self.next + 1) % HINT_FRAMES;
        self.noted = true;
    }

    /// Records the next frame's first readback takes, at most `max_keypoints`.
    pub(crate) fn records(&self, max_keypoints: usize) -> usize {
        if !self.noted {
            return Self::FIRST.min(max_keypoints);
        }
        let largest = self.recent.iter().copied().max().unwrap_or(0);
        readback_hint(largest, max_keypoints)
    }
}

/// What a detector's kernels add to the [`FrameIo`] they embed.
pub(crate) trait DetectorKernels: std::fmt::Debug + Send {
    /// The shared plumbing.
    fn io(&self) -> &FrameIo;
    /// Enqueues the kernels of one frame (their events go to `events`).
    fn enqueue(&mut self, frame: Launch<'_>, events: &mut Events) -> Result<(), OpenClError>;
    /// The shared plumbing, mutably.
    fn io_mut(&mut self) -> &mut FrameIo;
    /// What the detector was made for.
    fn config(&self) -> DetectorConfig;
    /// Takes a frame's result header: `Ok(true)` when the frame's records are complete,
    /// `Ok(false)` when the detector grew its buffers and the frame must run again, an error
    /// when its candidates cannot fit.
    fn accept(&mut self, header: Header<'_>) -> Result<bool, OpenClError>;
}

/// Reads back the header and the kept records (blocking) into pinned staging; returns the
/// candidates found, or `None` when the detector grew its buffers (the caller enqueues the
/// kernels again).
pub(crate) fn read_results<D: DetectorKernels + ?Sized>(
    detector: &mut D,
    events: &mut Events,
) -> Result<Option<usize>, OpenClError> {
    let io = detector.io_mut();
    let guess = io.read_hint.records(io.max_keypoints);
    match io.split_done.take() {
        Some((split, described)) => io.read_records_split(split, described, guess, events)?,
        None => io.read_records(0, guess, events)?,
    }
    let words = io.stage_out.host()?;
    let header: [u32; super::record::HEADER_WORDS] = match words.first_chunk() {
        Some(h) => *h,
        None => {
            return Err(OpenClError::Unsupported(
                "readback shorter than a header".into(),
            ));
        }
    };
    let Some(header) = Header::of(&header) else {
        return Err(OpenClError::Unsupported(
            "readback shorter than a header".into(),
        ));
    };
    if !detector.accept(header)? {
        return Ok(None);
    }
    let found = header.candidates();
    let io = detector.io_mut();
    io.last_candidates = Some(found);
    let kept = found.min(io.max_keypoints);
    if kept > guess {
        io.read_records(guess, kept, events)?;
    }
    io.note_kept(kept);
    Ok(Some(found))
}

/// One frame through a detector: size check, upload, kernels (again after a buffer grew),
/// readback and output.
pub(crate) fn run_frame<D: DetectorKernels + ?Sized>(
    detector: &mut D,
    image: &GrayImage<'_>,
) -> Result<DetectOutput, OpenClError> {
    let mut out = DetectOutput::default();
    run_frame_into(detector, image, &mut out)?;
    Ok(out)
}

/// [`run_frame`] into `out`, reusing the memory of its arrays (see [`Detector::detect_into`]).
pub(crate) fn run_frame_into<D: DetectorKernels + ?Sized>(
    detector: &mut D,
    image: &GrayImage<'_>,
    out: &mut DetectOutput,
) -> Result<(), OpenClError> {
    let (w, h) = (image.width(), image.height());
    run_frame_with(detector, w, h, out, |io, events| io.upload(image, events))
}

/// [`run_frame_into`] for the frame of `w x h` pixels that `upload` puts into the image buffer
/// (from the caller's memory, or from the pinned input area).
fn run_frame_with<D: DetectorKernels + ?Sized>(
    detector: &mut D,
    w: usize,
    h: usize,
    out: &mut DetectOutput,
    upload: impl FnOnce(&mut FrameIo, &mut Events) -> Result<(), OpenClError>,
) -> Result<(), OpenClError> {
    detector.io().check_size(w, h)?;
    let t0 = Instant::now();
    let mut events = Events::with_capacity(16);
    upload(detector.io_mut(), &mut events)?;
    let io = detector.io();
    let split = io.describe_split(io.read_hint.records(io.max_keypoints));
    let frame = Launch {
        input: None,
        width: w,
        height: h,
        wait: &[],
        split,
    };
    let found = loop {
        let done = detector
            .enqueue(frame, &mut events)
            .and_then(|()| read_results(detector, &mut events));
        match done {
            Ok(Some(found)) => break found,
            Ok(None) => {}
            Err(e) => {
                // A first readback part may be on the transfer queue, which is not ordered
                // with this frame's kernels: let those finish before anything else is sent.
                let _ = detector.io().gpu.queue.finish();
                return Err(e);
            }
        }
    };
    let io = detector.io_mut();
    io.last_size = (w, h);
    let wall_ms = t0.elapsed().as_secs_f64() * 1e3;
    io.output_into(found, &events, wall_ms, out)
}

/// A frame size the caller declared (not yet backed by an image): not empty, within the
/// core's limits.
fn check_frame(width: usize, height: usize) -> Result<(), OpenClError> {
    surfcl_core::image::check_dimensions(width, height)
        .map(|_| ())
        .map_err(|e| OpenClError::Unsupported(e.to_string()))
}

/// Which detector, for what frames and capacity.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DetectorConfig {
    /// SURF (the [`Pipeline`] of this configuration).
    Surf(PipelineConfig),
    /// Harris corners with upright SURF-64 descriptors at the fixed scale (the
    /// [`HarrisPipeline`] of this configuration).
    Harris(HarrisPipelineConfig),
}

impl DetectorConfig {
    /// The detector that `params` choose (SURF or Harris, their configuration and keypoint
    /// capacity), for frames up to `max_width x max_height`, with the default work-group sizes.
    pub fn for_params(params: &DetectParams, max_width: usize, max_height: usize) -> Self {
        match params.detector {
            DetectorKind::Surf => Self::Surf(PipelineConfig {
                max_width,
                max_height,
                surf: params.surf,
                max_keypoints: params.max_keypoints,
                local_size: None,
            }),
            DetectorKind::Harris => Self::Harris(HarrisPipelineConfig::new(
                max_width,
                max_height,
                params.harris,
                params.max_keypoints,
            )),
        }
    }

    /// The largest frame (width, height).
    pub fn max_size(&self) -> (usize, usize) {
        match self {
            Self::Surf(c) => (c.max_width, c.max_height),
            Self::Harris(c) => (c.max_width, c.max_height),
        }
    }

    /// The same detector for frames up to `max_width x max_height`.
    pub fn with_max_size(mut self, max_width: usize, max_height: usize) -> Self {
        match &mut self {
            Self::Surf(c) => (c.max_width, c.max_height) = (max_width, max_height),
            Self::Harris(c) => (c.max_width, c.max_height) = (max_width, max_height),
        }
        self
    }

    /// The same detector with `local_size` work-items per group (results do not depend on it).
    pub fn with_local_size(mut self, local_size: Option<usize>) -> Self {
        match &mut self {
            Self::Surf(c) => c.local_size = local_size,
            Self::Harris(c) => c.local_size = local_size,
        }
        self
    }

    /// Whether both configurations detect the same way (they may differ in the frame size).
    pub fn same_detector(&self, other: &Self) -> bool {
        let (w, h) = self.max_size();
        *self == other.with_max_size(w, h)
    }

    /// Opens the detector's kernels on `gpu`: the registration of every detector.
    pub(crate) fn open(self, gpu: Gpu) -> Result<Box<dyn DetectorKernels>, OpenClError> {
        Ok(match self {
            Self::Surf(c) => Box::new(Pipeline::new(gpu, c)?),
            Self::Harris(c) => Box::new(HarrisPipeline::new(gpu, c)?),
        })
    }
}

/// A detector on one OpenCL device (SURF or Harris), reused for every frame: the public handle
/// of the detector registration (`DetectorConfig`).
#[derive(Debug)]
pub struct Detector {
    kernels: Box<dyn DetectorKernels>,
}

impl Detector {
    /// Opens `config` on the device chosen by `spec` (see [`super::open`]).
    pub fn open(spec: Option<&str>, config: DetectorConfig) -> Result<Self, OpenClError> {
        Self::new(Gpu::new(super::select(spec)?)?, config)
    }

    pub(crate) fn new(gpu: Gpu, config: DetectorConfig) -> Result<Self, OpenClError> {
        Ok(Self {
            kernels: config.open(gpu)?,
        })
    }

    /// Detects (and describes) the keypoints of one frame, strongest first.
    pub fn detect(&mut self, image: &GrayImage<'_>) -> Result<DetectOutput, OpenClError> {
        run_frame(self.kernels.as_mut(), image)
    }

    /// [`Self::detect`] into `out`, reusing the memory of its keypoint and descriptor arrays: a
    /// caller that processes frame after frame hands back the output of a frame it no longer
    /// needs, so that the arrays (1.1 MiB at 4096 keypoints) are not allocated again. Every
    /// field of `out` is replaced on success (the result is the one [`Self::detect`] returns);
    /// on error its contents are unspecified.
    pub fn detect_into(
        &mut self,
        image: &GrayImage<'_>,
        out: &mut DetectOutput,
    ) -> Result<(), OpenClError> {
        run_frame_into(self.kernels.as_mut(), image, out)
    }

    /// Pinned host memory for the pixels of a `width x height` frame (8-bit, row-major, no
    /// padding), to be processed by [`Self::detect_input`]. A caller that can write its frames
    /// there (a camera driver decoding or converting into it) saves the driver's copy of
    /// pageable memory: the upload becomes a DMA (2 MB in about 0.05 ms instead of 0.1 on an
    /// H100). Made on first use, as large as the detector's largest frame; the call waits for
    /// the last upload from it. Errors when the frame is larger than the detector's maximum.
    pub fn input_buffer(&mut self, width: usize, height: usize) -> Result<&mut [u8], OpenClError> {
        self.kernels.io_mut().input_area(width, height)
    }

    /// [`Self::detect`] of the `width x height` frame written into [`Self::input_buffer`] (its
    /// first `width * height` bytes, whatever they hold). Errors when no input buffer was asked
    /// for yet, or the frame is larger than the detector's maximum.
    pub fn detect_input(
        &mut self,
        width: usize,
        height: usize,
    ) -> Result<DetectOutput, OpenClError> {
        let mut out = DetectOutput::default();
        self.detect_input_into(width, height, &mut out)?;
        Ok(out)
    }

    /// [`Self::detect_input`] into `out`, reusing the memory of its keypoint and descriptor
    /// arrays as [`Self::detect_into`] does. Every field of `out` is replaced on success; on
    /// error its contents are unspecified.
    pub fn detect_input_into(
        &mut self,
        width: usize,
        height: usize,
        out: &mut DetectOutput,
    ) -> Result<(), OpenClError> {
        check_frame(width, height)?;
        run_frame_with(self.kernels.as_mut(), width, height, out, |io, events| {
            io.upload_input(width * height, events)
        })
    }

    /// [`Self::detect_input_into`] of the `width x height` frame held by the first
    /// `width * height` bytes of `frame`: uploaded from it by DMA without blocking the host (the
    /// frame waits for that upload before its memory is reached again), so that the frames a
    /// caller fills on another thread need no copy into [`Self::input_buffer`]. Errors when the
    /// frame holds fewer bytes or is larger than the detector's maximum.
    pub fn detect_pinned_into(
        &mut self,
        frame: &mut PinnedFrame,
        width: usize,
        height: usize,
        out: &mut DetectOutput,
    ) -> Result<(), OpenClError> {
        check_frame(width, height)?;
        let n = width * height;
        if frame.capacity() < n {
            return Err(OpenClError::Unsupported(format!(
                "a {width}x{height} frame does not fit a pinned frame of {} bytes",
                frame.capacity()
            )));
        }
        run_frame_with(self.kernels.as_mut(), width, height, out, |io, events| {
            upload_pinned(&mut frame.staging, &io.image, &io.gpu, n, events)
        })
    }

    /// Blocking readbacks of results this detector has made (a frame normally takes one; a
    /// second when it keeps more records than the first readback took).
    pub fn readbacks(&self) -> u64 {
        self.kernels.io().readbacks
    }

    /// What the detector was made for.
    pub fn config(&self) -> DetectorConfig {
        self.kernels.config()
    }

    /// The device, as "platform / device".
    pub fn device_name(&self) -> String {
        self.kernels.io().gpu.name()
    }

    /// Device memory held by the detector's buffers, bytes.
    pub fn device_bytes(&self) -> u64 {
        self.kernels.io().device_bytes
    }

    pub(crate) fn kernels(&self) -> &dyn DetectorKernels {
        self.kernels.as_ref()
    }

    pub(crate) fn kernels_mut(&mut self) -> &mut dyn DetectorKernels {
        self.kernels.as_mut()
    }
}

/// Uploads the first `n` bytes of the pinned `area` into `image` without blocking (a DMA; the
/// area waits for it before the host touches it again): the detector's input area and a
/// caller's [`PinnedFrame`] alike.
fn upload_pinned(
    area: &mut Staging<u8>,
    image: &Buffer<u8>,
    gpu: &Gpu,
    n: usize,
    events: &mut Events,
) -> Result<(), OpenClError> {
    let mut ev = Event::empty();
    area.upload(image, 0..n, &gpu.queue, false, &mut ev)?;
    events.push(("upload", ev));
    Ok(())
}

/// Pinned host memory for one frame (`CL_MEM_ALLOC_HOST_PTR`, mapped for its whole life), owned
/// by the caller: [`crate::backend::Backend::input_frame`] of the OpenCL backend. Unlike the
/// detector's one input area ([`Detector::input_buffer`]), which the thread that detects must
/// hand out for every frame, any number of these can exist, be written on other threads while
/// the detector works on one of them, and be detected by [`Detector::detect_pinned_into`].
///
/// The upload from it is a DMA (the driver recognises the mapped pointer of its own pinned
/// buffer); from a detector of another context it is still correct, only staged by the driver.
#[derive(Debug)]
pub struct PinnedFrame {
    staging: Staging<u8>,
}

impl PinnedFrame {
    /// Allocates and maps `capacity` bytes (at least 1) on `gpu`'s context.
    pub(crate) fn new(gpu: &Gpu, capacity: usize) -> Result<Self, OpenClError> {
        Ok(Self {
            staging: Staging::new(gpu, "pinned input frame", capacity.max(1))?,
        })
    }

    /// Bytes the frame holds.
    pub fn capacity(&self) -> usize {
        self.staging.len()
    }

    /// The frame's memory, after the last upload from it has completed.
    pub fn pixels_mut(&mut self) -> Result<&mut [u8], OpenClError> {
        self.staging.host()
    }
}

impl crate::backend::InputFrame for PinnedFrame {
    fn capacity(&self) -> usize {
        PinnedFrame::capacity(self)
    }
    fn pixels_mut(&mut self) -> Result<&mut [u8], crate::Error> {
        Ok(PinnedFrame::pixels_mut(self)?)
    }
}

/// Rows per band of surf.cl's integral kernels: one work-group of `integral_bands` per band, so
/// 1920x1080 is 270 groups at 4 rows (68 at 16 left half of an H100's 132 multiprocessors
/// idle: `integral_bands` 0.020 -> 0.013 ms, same run, docs/BENCHMARKS.md).
const INTEGRAL_BAND: usize = 4;
/// Adjacent columns per work-item of `integral_bands` (8: its vector types).
const INTEGRAL_COLS: usize = 8;
/// Work-items per segment of `integral_bands`' row scans.
const INTEGRAL_SEG: usize = 16;
/// The three above as `-D` options of every program built from surf.cl (their one definition).
pub(crate) const INTEGRAL_DEFINES: [(&str, usize); 3] = [
    ("INTEGRAL_BAND", INTEGRAL_BAND),
    ("INTEGRAL_COLS", INTEGRAL_COLS),
    ("INTEGRAL_SEG", INTEGRAL_SEG),
];
/// Columns per work-group of `integral_band_sums`: 32 bytes of each row, one memory sector.
const STRIP_COLS: usize = 32;
/// Chunks of bands `integral_band_sums` cuts a frame into at most: `integral_bands` adds one
/// total per chunk above its band to each column it starts, so more chunks cost loads there,
/// fewer cost longer columns per work-item in `integral_band_sums`.
const MAX_CHUNKS: usize = 16;

/// Bands of a frame of `h` rows.
fn band_count(h: usize) -> usize {
    h.div_ceil(INTEGRAL_BAND)
}

/// Bands per work-item of `integral_band_sums` for a frame of `h` rows, `segs` work-items per
/// column: the fewest that keep the chunks (`segs` times this many bands) at [`MAX_CHUNKS`].
fn integral_item_bands(h: usize, segs: usize) -> usize {
    band_count(h).div_ceil(MAX_CHUNKS * segs).max(1)
}

/// Words of `band_sums` a frame of `w x h` pixels uses: a row of `w` per band, then one per
/// chunk (at most [`MAX_CHUNKS`], whatever the work-group size).
fn integral_band_sum_words(w: usize, h: usize) -> usize {
    let bands = band_count(h);
    (bands + bands.min(MAX_CHUNKS)) * w
}

/// Words of local memory `integral_bands` uses with `lsz` work-items: surf.cl's layout, the row
/// scans (a stride of 1 mod 32 words per row, then the segment offsets) or the two staged
/// output rows (a pad word per 32), whichever is larger.
fn integral_bands_local_words(lsz: usize) -> usize {
    let stride = lsz.next_multiple_of(32) + 1;
    let scan = INTEGRAL_BAND * (stride + lsz.div_ceil(INTEGRAL_SEG) + 1);
    let row = lsz * INTEGRAL_COLS;
    scan.max(2 * (row + row / 32))
}

/// surf.cl's integral image kernels (`integral_band_sums`, `integral_bands`) over a detector's
/// image and integral buffers, with their work-group sizes: SURF samples the integral image,
/// Harris describes its corners from it.
#[derive(Debug)]
pub(crate) struct IntegralKernels {
    sums: Kernel,
    bands: Kernel,
    sums_local: usize,
    bands_local: usize,
    /// Columns per work-group of `integral_band_sums` (the rest of the group splits the bands).
    strip_cols: usize,
    /// What `integral_band_sums` leaves for `integral_bands` (per band the column sums over its
    /// chunk above it, then every chunk's totals), sized for the largest frame.
    band_sums: Buffer<u32>,
}

impl IntegralKernels {
    /// `wanted`: work-items per group, `None` for the defaults (256 for the band sums; for the
    /// bands 256, or fewer when 8 columns per work-item cover the widest frame with fewer).
    /// `integral_band_sums` also clears the result header, so no separate fill is needed.
    pub(crate) fn new(
        gpu: &Gpu,
        program: &Program,
        io: &FrameIo,
        integral: &Buffer<u32>,
        wanted: Option<usize>,
    ) -> Result<Self, OpenClError> {
        let (mw, mh) = (io.max_width, io.max_height);
        let band_sums = gpu.buffer::<u32>(
            "integral band sums",
            integral_band_sum_words(mw, mh),
            MemFlags::new().read_write(),
        )?;
        let (w0, h0) = (mw as i32, mh as i32);
        let build_sums = |lsz: usize| {
            let strip = STRIP_COLS.min(lsz);
            gpu.kernel(program, "integral_band_sums")
                .arg(&io.image)
                .arg(w0)
                .arg(h0)
                .arg(strip as i32)
                .arg(integral_item_bands(mh, lsz / strip) as i32)
                .arg(&band_sums)
                .arg(&io.result)
                .arg_local::<u32>(lsz)
                .build()
                .map_err(OpenClError::runtime("kernel integral_band_sums"))
        };
        // Both keep local memory in proportion to their work-group: a kernel whose work-group
        // size the device or the kernel lowers is rebuilt with the smaller local buffer.
        let (sums, sums_local) =
            gpu.kernel_fitting(gpu.fit_local(wanted.unwrap_or(256), 1), build_sums)?;
        let strip_cols = STRIP_COLS.min(sums_local);
        let segs = sums_local / strip_cols;
        let build_bands = |lsz: usize| {
            gpu.kernel(program, "integral_bands")
                .arg(&io.image)
                .arg(integral)
                .arg(w0)
                .arg(h0)
                .arg((segs * integral_item_bands(mh, segs)) as i32)
                .arg(&band_sums)
                .arg_local::<u32>(integral_bands_local_words(lsz))
                .build()
                .map_err(OpenClError::runtime("kernel integral_bands"))
        };
        // Up to 256 work-items, as many as cover the widest frame in one chunk of columns:
        // work-items past the frame's columns would still take part in every scan.
        let bands_want =
            wanted.unwrap_or_else(|| mw.div_ceil(INTEGRAL_COLS).next_multiple_of(32).min(256));
        let per_item = integral_bands_local_words(bands_want).div_ceil(bands_want);
        let (bands, bands_local) =
            gpu.kernel_fitting(gpu.fit_local(bands_want, per_item), build_bands)?;
        Ok(Self {
            sums,
            bands,
            sums_local,
            bands_local,
            strip_cols,
            band_sums,
        })
    }

    /// Device memory of the band sums, bytes.
    pub(crate) fn device_bytes(&self) -> u64 {
        4 * self.band_sums.len() as u64
    }

    /// Bands per work-item of `integral_band_sums` and chunks of bands for a frame of `h` rows.
    fn chunking(&self, h: usize) -> (usize, usize) {
        let segs = self.sums_local / self.strip_cols;
        let per_item = integral_item_bands(h, segs);
        (per_item, band_count(h).div_ceil(segs * per_item))
    }

    /// Points the kernels at a `w x h` frame in `image`.
    pub(crate) fn set_frame(&self, image: &Buffer<u8>, w: i32, h: i32) -> Result<(), OpenClError> {
        let (Ok(wu), Ok(hu)) = (usize::try_from(w), usize::try_from(h)) else {
            return Err(OpenClError::Unsupported(format!("a {w}x{h} frame")));
        };
        let (per_item, chunks) = self.chunking(hu);
        // The rows of band sums a frame takes follow the work-group size too, not only the
        // frame size that `FrameIo::check_size` bounds: no launch may write past them.
        if (band_count(hu) + chunks) * wu > self.band_sums.len() {
            return Err(OpenClError::Unsupported(format!(
                "a {w}x{h} frame's integral band sums exceed their {}-word buffer",
                self.band_sums.len()
            )));
        }
        let chunk_bands = (self.sums_local / self.strip_cols) * per_item;
        self.sums
            .set_arg(0, image)
            .and_then(|_| self.sums.set_arg(1, w))
            .and_then(|_| self.sums.set_arg(2, h))
            .and_then(|_| self.sums.set_arg(4, per_item as i32))
            .and_then(|_| self.bands.set_arg(0, image))
            .and_then(|_| self.bands.set_arg(2, w))
            .and_then(|_| self.bands.set_arg(3, h))
            .and_then(|_| self.bands.set_arg(4, chunk_bands as i32))
            .map_err(OpenClError::runtime("set kernel arguments"))
    }

    /// Enqueues both passes for a `w x h` frame (the one [`Self::set_frame`] last pointed them
    /// at); the first waits for `wait`.
    pub(crate) fn enqueue(
        &self,
        w: usize,
        h: usize,
        wait: &[Event],
        events: &mut Events,
    ) -> Result<(), OpenClError> {
        let bands = band_count(h);
        let (_, chunks) = self.chunking(h);
        let mut ev = Event::empty();
        launch_after(
            &self.sums,
            w.div_ceil(self.strip_cols) * chunks * self.sums_local,
            self.sums_local,
            wait,
            &mut ev,
        )?;
        events.push(("integral_band_sums", ev));
        let mut ev = Event::empty();
        launch_after(
            &self.bands,
            bands * self.bands_local,
            self.bands_local,
            &[],
            &mut ev,
        )?;
        events.push(("integral_bands", ev));
        Ok(())
    }
}

/// Local memory of surf.cl's `descriptor` kernel (5072 bytes, as ptxas reports it): the larger
/// of the 24 x 24 sample grid (576 float2) and the orientation's scratch (4712 bytes), which
/// share it, plus the sub-region sums, lengths and weights (90 floats). Well within the 16 KB of
/// ION-class boards.
pub(crate) const DESCRIPTOR_LOCAL: u64 = 4712 + 90 * 4;

/// Work-items per keypoint of surf.cl's `descriptor` kernel (fewer where the device or kernel
/// allows fewer). Measured on an H100 (2026-11-25, docs/BENCHMARKS.md), 4096 keypoints at
/// 1920x1080: 64 work-items 0.166 ms, 128 0.104, 256 0.067, 512 0.066 (then 1296 samples per
/// keypoint: 6 steps instead of 11; now 576, 3 steps).
pub(crate) const DESCRIPTOR_WORK_ITEMS: usize = 256;

/// The 109 orientation samples `(i, j, weight, 0)` in OpenSURF's order, with the core's integer
/// Gaussian weights in units of `2^-16` (exact in `f32`; its compile-time `expf`, the same bits
/// as at run time: `docs/ARCHITECTURE.md`, orientation), so the kernel computes no `exp` per
/// sample.
fn orientation_table() -> Vec<f32> {
    ORIENTATION_GRID
        .iter()
        .flat_map(|&(i, j, weight)| [f32::from(i), f32::from(j), weight, 0.0])
        .collect()
}

/// Device bytes of the orientation table each descriptor kernel reads.
pub(crate) const ORIENTATION_TABLE_BYTES: usize = 16 * ORIENTATION_GRID.len();

/// surf.cl's `descriptor` kernel over a detector's integral image and result records, after
/// checking that the device has the local memory it needs. Unless `upright`, it computes each
/// keypoint's orientation first (from the orientation table it is given here).
pub(crate) fn descriptor_kernel(
    gpu: &Gpu,
    program: &Program,
    io: &FrameIo,
    integral: &Buffer<u32>,
    candidate_capacity: usize,
    upright: bool,
) -> Result<Kernel, OpenClError> {
    let local_mem = gpu.selected.info.local_mem_bytes;
    if local_mem > 0 && local_mem < DESCRIPTOR_LOCAL {
        return Err(OpenClError::Unsupported(format!(
            "the descriptor kernel needs {DESCRIPTOR_LOCAL} bytes of local memory, the device has {local_mem}"
        )));
    }
    let table = gpu.constant("orientation table", &orientation_table())?;
    gpu.kernel(program, "descriptor")
        .arg(integral)
        .arg(io.max_width as i32)
        .arg(io.max_height as i32)
        .arg(candidate_capacity as u32)
        .arg(io.max_keypoints as u32)
        .arg(i32::from(upright))
        .arg(&io.result)
        .arg(0u32)
        .arg(u32::MAX)
        .arg(&table)
        .build()
        .map_err(OpenClError::runtime("kernel descriptor"))
}

/// Readbacks of at least this many records are split ([`Launch::split`]): below it a second
/// launch and transfer cost more than the overlap saves.
const SPLIT_MIN_RECORDS: usize = 512;
/// The part of a split readback's records described (and read back) first: `SPLIT_NUM /
/// SPLIT_DEN`. Its transfer should take about as long as the rest of the descriptors (on an
/// H100 at 1080p, 4096 records: 0.023 ms to read back, 0.057 to describe).
const SPLIT_NUM: usize = 3;
const SPLIT_DEN: usize = 4;

/// Enqueues surf.cl's `descriptor` kernel (made by [`descriptor_kernel`]) over `groups` groups
/// of `local` work-items: in one launch, or, when `split` asks for it, the first records in a
/// launch of their own whose event is returned with their count (for [`FrameIo::split_done`]),
/// then the rest.
pub(crate) fn enqueue_descriptor(
    kernel: &Kernel,
    groups: usize,
    local: usize,
    split: Option<usize>,
    events: &mut Events,
) -> Result<Option<(usize, Event)>, OpenClError> {
    // Argument positions of the first and the end record (surf.cl).
    let range = |first: usize, end: usize| {
        let (Ok(first), Ok(end)) = (u32::try_from(first), u32::try_from(end)) else {
            return Err(OpenClError::Unsupported(format!(
                "records {first}..{end} to describe"
            )));
        };
        kernel
            .set_arg(7, first)
            .and_then(|_| kernel.set_arg(8, end))
            .map_err(OpenClError::runtime("set kernel arguments"))
    };
    let mut first_part = None;
    let mut from = 0;
    if let Some(split) = split.filter(|&s| s > 0) {
        range(0, split)?;
        let mut ev = Event::empty();
        launch_after(kernel, groups.min(split) * local, local, &[], &mut ev)?;
        events.push(("descriptor", ev.clone()));
        first_part = Some((split, ev));
        from = split;
    }
    range(from, u32::MAX as usize)?;
    let mut ev = Event::empty();
    launch_after(kernel, groups * local, local, &[], &mut ev)?;
    events.push(("descriptor", ev));
    Ok(first_part)
}

#[cfg(test)]
mod tests {
    use super::*;
    use surfcl_core::describe::describe_all;
    use surfcl_core::integral::integral_len;
    use surfcl_core::surf::{self, SurfConfig};
    use surfcl_core::{IntegralImage, KeypointBuffer, KeypointSink};

    /// Frames read back in two parts (the first records described apart, their readback on
    /// the transfer queue) give the core's keypoints and descriptors bit for bit, from the
    /// pinned input area, a caller's pinned frame and pageable memory. Fails (rather than
    /// passing vacuously) without an OpenCL device.
    #[test]
    fn split_readbacks_match_the_core() {
        let boat = crate::opencl::test_images::boat();
        let (w, h) = (boat.width, boat.height);
        let image = GrayImage::new(&boat.pixels, w, h).unwrap();
        let surf = SurfConfig::default();
        let max_kp = 2000;
        let mut table = vec![0u32; integral_len(w, h).unwrap()];
        let ii = IntegralImage::compute(&image, &mut table).unwrap();
        let mut scratch = vec![0u32; surf::scratch_len(&surf, w, h).unwrap()];
        let mut storage = vec![Keypoint::default(); max_kp];
        let mut sink = KeypointBuffer::new(&mut storage);
        surf::detect(&ii, &surf, &mut scratch, &mut sink).unwrap();
        let mut want = sink.points().to_vec();
        let mut want_desc = vec![[0f32; 64]; want.len()];
        describe_all(&ii, &mut want, surf.upright, &mut want_desc).unwrap();
        assert!(want.len() > SPLIT_MIN_RECORDS, "{} keypoints", want.len());

        let config = DetectorConfig::Surf(PipelineConfig {
            max_width: w,
            max_height: h,
            surf,
            max_keypoints: max_kp,
            local_size: None,
        });
        let mut detector = Detector::open(None, config).unwrap_or_else(|e| {
            panic!("this test needs an OpenCL device (CI: apt-get install pocl-opencl-icd): {e}")
        });
        assert!(detector.kernels().io().transfer_queue.is_some());
        let same = |got: &DetectOutput, what: &str| {
            assert_eq!(got.keypoints.len(), want.len(), "{what}");
            for (k, (a, b)) in want.iter().zip(&got.keypoints).enumerate() {
                assert_eq!(
                    (a.octave, a.interval, a.sample_x, a.sample_y, a.laplacian),
                    (b.octave, b.interval, b.sample_x, b.sample_y, b.laplacian),
                    "{what}: keypoint {k}"
                );
                assert_eq!(
                    [a.response, a.x, a.y, a.scale, a.orientation].map(f32::to_bits),
                    [b.response, b.x, b.y, b.scale, b.orientation].map(f32::to_bits),
                    "{what}: keypoint {k}"
                );
            }
            for (k, (a, b)) in want_desc.iter().zip(&got.descriptors).enumerate() {
                assert_eq!(
                    a.map(f32::to_bits),
                    b.map(f32::to_bits),
                    "{what}: descriptor {k}"
                );
            }
        };
        detector
            .input_buffer(w, h)
            .unwrap()
            .copy_from_slice(&boat.pixels);
        // The first frame's readback is too small to split; the next ones split.
        for frame in 0..3 {
            let before = detector.readbacks();
            let io = detector.kernels().io();
            let split = io.describe_split(io.read_hint.records(max_kp));
            assert_eq!(split.is_some(), frame > 0, "frame {frame}");
            let got = detector.detect_input(w, h).unwrap();
            same(&got, &format!("pinned input, frame {frame}"));
            if frame > 0 {
                assert_eq!(detector.readbacks(), before + 1, "frame {frame}");
            }
        }
        let mut pinned = PinnedFrame::new(&detector.kernels().io().gpu, w * h).unwrap();
        pinned.pixels_mut().unwrap().copy_from_slice(&boat.pixels);
        let mut out = DetectOutput::default();
        detector
            .detect_pinned_into(&mut pinned, w, h, &mut out)
            .unwrap();
        same(&out, "pinned frame");
        // From pageable memory.
        same(&detector.detect(&image).unwrap(), "pageable frame");
    }

    #[test]
    fn the_band_sums_of_any_smaller_frame_fit_the_buffer() {
        let (mw, mh) = (1028, 16384);
        let words = integral_band_sum_words(mw, mh);
        for segs in [1, 2, 3, 8, 16, 32, 1024] {
            for h in (1..=mh).step_by(7).chain([mh]) {
                let bands = band_count(h);
                let chunk = segs * integral_item_bands(h, segs);
                let chunks = bands.div_ceil(chunk);
                assert!(
                    chunks <= MAX_CHUNKS.min(bands),
                    "h {h} segs {segs}: {chunks}"
                );
                assert!((bands + chunks) * mw <= words, "h {h} segs {segs}");
            }
        }
    }

    #[test]
    fn the_read_hint_covers_the_largest_count_of_the_last_frames() {
        let mut hint = ReadHint::default();
        assert_eq!(hint.records(4096), 256);
        assert_eq!(hint.records(100), 100);
        // Two scenes alternating, 1000 and 600 records kept: a hint from the last frame alone
        // (814 after a 600 frame) would make every 1000 frame read a second time.
        for _ in 0..3 {
            hint.note(1000);
            assert!(hint.records(4096) >= 1000);
            hint.note(600);
            assert!(hint.records(4096) >= 1000, "{}", hint.records(4096));
        }
        assert_eq!(hint.records(4096), readback_hint(1000, 4096));
        // A lasting drop shrinks the readback again after `HINT_FRAMES` frames.
        for _ in 0..HINT_FRAMES {
            hint.note(100);
        }
        assert_eq!(hint.records(4096), readback_hint(100, 4096));
        // Never beyond the capacity.
        hint.note(5000);
        assert_eq!(hint.records(4096), 4096);
    }
}
