//! The per-frame base of every OpenCL detector: what a frame needs whichever detector runs.
//!
//! A detector (SURF in `surf.rs`, Harris in `harris.rs`) is a set of kernels behind
//! [`DetectorKernels`]. Everything else about a frame is the same for all of them and lives
//! here, in [`FrameIo`] and [`run_frame`]: the size check, the upload (straight from the
//! caller's pixels, from the detector's pinned input area or from a caller's [`PinnedFrame`]),
//! the readback of the result header and the kept records (sized from the last frames,
//! [`ReadHint`]; a second read only when a frame keeps more), the re-run after a detector grew
//! its buffers, and the output built from the records ([`super::record`]), into the caller's
//! arrays when it hands some back.
//!
//! This file knows no detector: the registry of detectors (`detector.rs`) builds on it, as the
//! detectors themselves do.

use std::time::Instant;

use ocl::flags::MemFlags;
use ocl::{Buffer, Event, Queue};
use surfcl_core::{Descriptor, GrayImage, Keypoint};

use super::enqueue::Staging;
use super::error::OpenClError;
use super::gpu::Gpu;
use super::inject::{self, FaultPoint};
use super::record::{HEADER_WORDS, Header, Record, readback_words};
use crate::backend::{InputFrame, MAX_KEYPOINTS_LIMIT, StageTiming};
use crate::error::Error;

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
    /// Pinned host memory for a caller that writes frames there ([`FrameIo::input_area`]),
    /// made on first use.
    stage_in: Option<Staging<u8>>,
    read_hint: ReadHint,
    /// Blocking readbacks of the result buffer so far (tests check that a frame takes one).
    pub readbacks: u64,
    /// Size of the last frame (for the debugging readbacks).
    pub last_size: (usize, usize),
    /// Candidates the detector's candidate buffer holds now (set by the detector).
    pub candidate_capacity: usize,
    /// Work-groups the descriptor kernel runs in ([`FrameIo::describe`]; set by the detector
    /// for its device).
    pub descriptor_groups: usize,
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
    /// The candidates `header` reports when they did not fit the candidate buffer (the kernels
    /// found more than its capacity, or flagged an overflow); `None` when they fit.
    pub(crate) fn candidates_overflow(&self, header: Header<'_>) -> Option<usize> {
        let found = header.candidates();
        (header.overflowed() || found > self.candidate_capacity).then_some(found)
    }

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
        // Optional: without it every transfer runs on the detector's queue.
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
            descriptor_groups: 1,
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
    pub(crate) fn input_area(
        &mut self,
        width: usize,
        height: usize,
    ) -> Result<&mut [u8], OpenClError> {
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
    /// driver copies pageable memory through its own pinned buffers while the transfer runs,
    /// which is faster end to end than a copy into a pinned staging area first
    /// (docs/BENCHMARKS.md).
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

    /// Records the next frame describes apart ([`Launch::split`]), from the readback hint.
    pub(crate) fn next_split(&self) -> Option<usize> {
        self.describe_split(self.read_hint.records(self.max_keypoints))
    }

    /// Whether readbacks can travel on a queue of their own (split readbacks need one).
    #[cfg(test)]
    pub(crate) fn has_transfer_queue(&self) -> bool {
        self.transfer_queue.is_some()
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
/// come from pages the allocator returned to the system, which the kernel must fault in). Every
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
    // them cached. Keypoints first would read every record's first words at a 288-byte stride
    // from memory, a cache miss per record.
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
    /// Takes a frame's result header: `Ok(true)` when the frame's records are complete,
    /// `Ok(false)` when the detector grew its buffers and the frame must run again, an error
    /// when its candidates cannot fit.
    fn accept(&mut self, header: Header<'_>) -> Result<bool, OpenClError>;
}

/// What every detector's configuration offers the registry (`detector.rs`): the kernels it
/// opens. (The frame and work-group sizes are fields of every configuration, which the
/// registry reads directly.)
pub(crate) trait DetectorSetup {
    /// Opens the detector's kernels on `gpu`.
    fn open(&self, gpu: Gpu) -> Result<Box<dyn DetectorKernels>, OpenClError>;
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
    let header: [u32; HEADER_WORDS] = match words.first_chunk() {
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

/// [`run_frame`] into `out`, reusing the memory of its arrays (a caller that detects frame
/// after frame hands back the output of one it no longer needs).
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
    let split = detector.io().next_split();
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

/// [`run_frame_into`] of the `width x height` frame written into the detector's pinned input
/// area ([`FrameIo::input_area`]): its first `width * height` bytes, whatever they hold.
pub(crate) fn run_input_frame<D: DetectorKernels + ?Sized>(
    detector: &mut D,
    width: usize,
    height: usize,
    out: &mut DetectOutput,
) -> Result<(), OpenClError> {
    check_frame(width, height)?;
    run_frame_with(detector, width, height, out, |io, events| {
        io.upload_input(width * height, events)
    })
}

/// [`run_frame_into`] of the `width x height` frame held by the first `width * height` bytes
/// of `frame`, uploaded from it by DMA without blocking the host (the frame waits for that
/// upload before its memory is reached again). Errors when the frame holds fewer bytes.
pub(crate) fn run_pinned_frame<D: DetectorKernels + ?Sized>(
    detector: &mut D,
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
    run_frame_with(detector, width, height, out, |io, events| {
        upload_pinned(&mut frame.staging, &io.image, &io.gpu, n, events)
    })
}

/// A frame size the caller declared (not yet backed by an image): not empty, within the
/// core's limits.
fn check_frame(width: usize, height: usize) -> Result<(), OpenClError> {
    surfcl_core::image::check_dimensions(width, height)
        .map(|_| ())
        .map_err(|e| OpenClError::Unsupported(e.to_string()))
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
/// detector's one input area ([`FrameIo::input_area`]), which the thread that detects must
/// hand out for every frame, any number of these can exist, be written on other threads while
/// the detector works on one of them, and be detected by [`run_pinned_frame`].
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

impl InputFrame for PinnedFrame {
    fn capacity(&self) -> usize {
        PinnedFrame::capacity(self)
    }
    fn pixels_mut(&mut self) -> Result<&mut [u8], Error> {
        Ok(PinnedFrame::pixels_mut(self)?)
    }
}

/// Readbacks of at least this many records are split ([`Launch::split`]): below it a second
/// launch and transfer cost more than the overlap saves.
pub(crate) const SPLIT_MIN_RECORDS: usize = 512;
/// The part of a split readback's records described (and read back) first: `SPLIT_NUM /
/// SPLIT_DEN`. Its transfer should take about as long as the rest of the descriptors (reading a
/// record back is faster than describing one on a GPU: docs/BENCHMARKS.md).
const SPLIT_NUM: usize = 3;
const SPLIT_DEN: usize = 4;

#[cfg(test)]
mod tests {
    use super::*;

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
