//! The processing thread: takes the newest frame from the slot, (re)opens the backend when its
//! parameters changed, detects, publishes keypoints, matches against the previous frame,
//! publishes matches (and the debug picture), and records the frame's times.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use ros2_client::ros2::LogLevel;
use surfcl_core::GrayImage;

use super::config::NodeConfig;
use super::entities::Outputs;
use super::graph;
use super::logger::Logger;
use super::publish::{self, DebugPicture};
use super::shared::{Shared, lock};
use super::slot::Frame;
use super::stats::StageTimes;
use crate::convert::{self, Layout};
use crate::frames::PooledFrame;
use crate::msg::{Header, Image, MatchMsg};
use crate::params::NodeParams;
use crate::processor::{Detection, InputFrame, Processor, ProcessorError, ProcessorFactory};

/// Opens the backend at start when the config asks for it (so that the start-up log names the
/// device) and hands it to the processing thread. Returns the start-up log line.
pub(super) fn open_at_start(
    config: &NodeConfig,
    factory: &dyn ProcessorFactory,
    shared: &Shared,
) -> String {
    let p = &config.params;
    let device = if p.device.is_empty() {
        "auto"
    } else {
        &p.device
    };
    let line = format!(
        "backend {:?}, device {device:?}, detector {:?}, max_keypoints {}, descriptor {:?}",
        p.backend, p.detector, p.max_keypoints, p.descriptor
    );
    if !config.open_backend_at_start {
        return format!("{line} (opened for the first frame)");
    }
    match factory.open(p) {
        Ok(processor) => {
            let described = processor.describe();
            lock(&shared.stats).backend = described.clone();
            *lock(&shared.staged) = Some((p.clone(), processor));
            format!("{line}: opened {described}")
        }
        Err(e) => format!("{line}: cannot be opened yet ({e}); it is tried again for each frame"),
    }
}

/// Waits for the newest frame; `None` when stopping.
fn next_frame(shared: &Shared) -> Option<Frame> {
    let mut slot = lock(&shared.slot);
    loop {
        if shared.stop.load(Ordering::SeqCst) {
            return None;
        }
        if let Some(frame) = slot.frame.take() {
            return Some(frame);
        }
        // Timed wait: a missed notification cannot hang the thread past the next check.
        slot = match shared.ready.wait_timeout(slot, Duration::from_millis(100)) {
            Ok((guard, _)) => guard,
            Err(poisoned) => poisoned.into_inner().0,
        };
    }
}

/// How a backend call failed.
enum BackendFault {
    /// It returned an error.
    Error(String),
    /// It panicked: its state is suspect, so the processor is dropped and reopened for the next
    /// frame (which, as after any reopen, is matched against nothing).
    Panic(String),
}

impl BackendFault {
    fn panicked(&self) -> bool {
        matches!(self, BackendFault::Panic(_))
    }
    fn text(&self) -> &str {
        match self {
            BackendFault::Error(t) | BackendFault::Panic(t) => t,
        }
    }
}

/// Runs a backend call; a panic becomes a failed frame instead of ending the processing thread
/// (which would leave the node alive but silent).
fn guarded<T>(call: impl FnOnce() -> Result<T, ProcessorError>) -> Result<T, BackendFault> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(call)) {
        Ok(r) => r.map_err(|e| BackendFault::Error(e.to_string())),
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "(no message)".into());
            Err(BackendFault::Panic(format!("backend panicked: {what}")))
        }
    }
}

/// The previous processed frame, for matching.
struct Previous {
    header: Header,
    detection: Detection,
}

fn ms_since(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// Splits the backend's own stage timings into upload, kernels and readback.
fn split_backend_timings(stages: &mut StageTimes, timings: &[(String, f64)]) {
    for (name, ms) in timings {
        if name.contains("upload") {
            stages.upload_ms += ms;
        } else if name.contains("readback") || name.starts_with("read") {
            stages.readback_ms += ms;
        } else {
            stages.kernels_ms += ms;
        }
    }
}

/// Where the gray pixels of a frame are.
enum Source<'a> {
    /// In one of the backend's input frames, converted on receipt.
    Frame(&'a mut dyn InputFrame),
    /// Still in the message: its `data`, laid out as the layout says.
    Message(&'a [u8]),
}

/// Detects a frame into `detection` (converting the message's pixels to gray first when they
/// are still in the message), timing both into `stages`.
///
/// A frame in an input frame (the OpenCL backend's pinned memory, filled by the receive thread)
/// is detected from there: it was copied once on the host, from the serialized message, and is
/// uploaded by DMA. For a frame still in the message, when the processor has an input area (the
/// OpenCL backend's pinned memory), the frame is converted (or, for `mono8`, copied without its
/// row padding) straight into it: the pixels are copied once more on the host and uploaded by
/// DMA, where the driver would otherwise copy the node's pageable memory first. Otherwise into `gray` (tightly packed `mono8`: not
/// at all) and detected from there.
fn detect_frame(
    processor: &mut dyn Processor,
    source: Source<'_>,
    layout: &Layout,
    params: &NodeParams,
    gray: &mut Vec<u8>,
    detection: &mut Detection,
    stages: &mut StageTimes,
) -> Result<(), ProcessorError> {
    let (width, height) = (layout.width, layout.height);
    let data = match source {
        Source::Frame(frame) => {
            let t = Instant::now();
            processor.detect_frame_into(frame, width, height, params, detection)?;
            stages.detect_ms = ms_since(t);
            return Ok(());
        }
        Source::Message(data) => data,
    };
    // Finding the area is the backend's time (its first frame makes the detector; later ones
    // wait for the last upload from the area), not the conversion's.
    let t = Instant::now();
    let area = processor.input_area(width, height, params)?;
    let area_ms = ms_since(t);
    if let Some(area) = area {
        let t = Instant::now();
        convert::to_gray_into(data, layout, area)
            .map_err(|e| ProcessorError::Frame(e.to_string()))?;
        stages.convert_ms = ms_since(t);
        let t = Instant::now();
        processor.detect_input_into(width, height, params, detection)?;
        stages.detect_ms = area_ms + ms_since(t);
        return Ok(());
    }
    let t = Instant::now();
    let pixels = convert::gray_view(data, layout, gray);
    stages.convert_ms = ms_since(t);
    let t = Instant::now();
    let image =
        GrayImage::new(pixels, width, height).map_err(|e| ProcessorError::Frame(e.to_string()))?;
    processor.detect_into(&image, params, detection)?;
    stages.detect_ms = area_ms + ms_since(t);
    Ok(())
}

/// The processing thread's state between frames.
struct Worker<'a> {
    shared: &'a Shared,
    factory: &'a dyn ProcessorFactory,
    out: &'a Outputs,
    log: &'a Logger,
    processor: Option<(NodeParams, Box<dyn Processor>)>,
    previous: Option<Previous>,
    /// The detection of the frame before the previous one: no longer needed, its arrays are
    /// refilled by the next frame's detection (`Processor::detect_into`) instead of allocated.
    spare: Detection,
    /// Gray pixels converted on the processing thread, reused.
    gray: Vec<u8>,
    /// The debug picture, reused.
    debug_rgb: Vec<u8>,
}

/// The processing thread: processes the newest frame until the node stops.
pub(super) fn process_loop(
    shared: &Shared,
    factory: &dyn ProcessorFactory,
    out: &Outputs,
    log: &Logger,
) {
    let mut worker = Worker {
        shared,
        factory,
        out,
        log,
        processor: None,
        previous: None,
        spare: Detection::default(),
        gray: Vec::new(),
        debug_rgb: Vec::new(),
    };
    while let Some(mut frame) = next_frame(shared) {
        worker.process(&mut frame);
    }
}

impl Worker<'_> {
    /// Counts and logs a failed frame. A frame whose detection fails publishes nothing; one
    /// whose matching fails has published its keypoints but publishes no matches. Neither
    /// becomes the previous frame: the next frame is matched against the last one that was
    /// published whole.
    fn fail(&self, image: &Image, what: &str, e: &str) {
        let text = format!(
            "frame {:?} (stamp {} ns): {what}: {e}",
            image.header.frame_id,
            image.header.stamp.to_nanos()
        );
        self.log.log(LogLevel::Error, &text);
        let mut s = lock(&self.shared.stats);
        s.failed += 1;
        s.last_error = text;
    }

    /// Handles a backend fault: a panicked processor is dropped (reopened for the next frame).
    fn fault(&mut self, image: &Image, what: &str, e: &BackendFault) {
        if e.panicked() {
            self.processor = None;
        }
        self.fail(image, what, e.text());
    }

    /// (Re)opens the backend when backend/device changed, preferring the one the parameter
    /// validator opened. False when none could be opened (the frame failed).
    fn ensure_processor(&mut self, params: &NodeParams, image: &Image) -> bool {
        if self
            .processor
            .as_ref()
            .is_some_and(|(p, _)| p.same_backend(params))
        {
            return true;
        }
        let staged = lock(&self.shared.staged)
            .take()
            .filter(|(p, _)| p.same_backend(params));
        let opened = match staged {
            Some(s) => Ok(s),
            None => self.factory.open(params).map(|p| (params.clone(), p)),
        };
        // The old backend's input frames go (lent ones when they come back): the new one makes
        // its own after this frame.
        self.shared.frames.reset();
        match opened {
            Ok((p, processor)) => {
                let described = processor.describe();
                self.log
                    .log(LogLevel::Info, &format!("backend: {described}"));
                lock(&self.shared.stats).backend = described;
                self.processor = Some((p, processor));
                // Descriptors from another backend are comparable, but keep frames apart
                // anyway: a backend switch is a configuration change.
                self.previous = None;
                true
            }
            Err(e) => {
                self.fail(image, "cannot open backend", &e.to_string());
                false
            }
        }
    }

    /// One frame, from the slot to its published outputs.
    fn process(&mut self, frame: &mut Frame) {
        let started = Instant::now();
        let mut stages = StageTimes {
            transport_ms: frame.arrival.transport_ms,
            deserialise_ms: frame.arrival.deserialise_ms,
            receive_convert_ms: frame.arrival.receive_convert_ms,
            queue_ms: started.duration_since(frame.arrival.taken).as_secs_f64() * 1e3,
            ..StageTimes::default()
        };
        let params = lock(&self.shared.params).clone();
        let subscribed = self.shared.subscribed.load(Ordering::SeqCst);
        if !graph::wanted(params.lazy, params.debug_image, subscribed) {
            lock(&self.shared.stats).skipped_lazy += 1;
            // The next processed frame may be long after this one: match it against nothing.
            self.previous = None;
            return;
        }
        if !self.ensure_processor(&params, &frame.image) {
            return;
        }
        let mut detection = std::mem::take(&mut self.spare);
        if let Err(e) = self.detect(frame, &params, &mut detection, &mut stages) {
            self.fault(&frame.image, "detection failed", &e);
            return;
        }
        split_backend_timings(&mut stages, &detection.timings);
        // Keypoints go out as soon as they exist: they do not depend on matching, and a robot
        // waiting for them should not wait for the matcher too (at 1920x1080 on a GPU, matching
        // is a quarter of the node's time).
        let header = frame.image.header.clone();
        let (out, log) = (self.out, self.log);
        let capacity = publish::keypoints(out, log, &header, &detection, &params, &mut stages);
        stages.keypoints_out_ms = stages.queue_ms + ms_since(started);
        let Some(n_matches) = self.matches(frame, &header, &mut detection, &params, &mut stages)
        else {
            return;
        };
        let ms = ms_since(started);
        stages.node_ms = stages.queue_ms + ms;
        self.record(&detection, n_matches, ms, stages, capacity);
        if let Some(old) = self.previous.replace(Previous { header, detection }) {
            self.spare = old.detection;
        }
        self.refill_frames(frame.layout.width * frame.layout.height);
    }

    /// Matches the frame against the previous one, publishes the matches (and the debug
    /// picture); the number of matches, or `None` when matching failed.
    fn matches(
        &mut self,
        frame: &mut Frame,
        header: &Header,
        detection: &mut Detection,
        params: &NodeParams,
        stages: &mut StageTimes,
    ) -> Option<usize> {
        let t = Instant::now();
        let (matches, previous_header) = match self.match_frame(detection, params) {
            Ok(m) => m,
            Err(e) => {
                self.fault(&frame.image, "matching failed", &e);
                return None;
            }
        };
        stages.match_ms = ms_since(t);
        let n_matches = matches.len();
        // Only the debug picture needs the matches after they are published.
        let drawn = if params.debug_image {
            matches.clone()
        } else {
            Vec::new()
        };
        let (out, log) = (self.out, self.log);
        publish::matches(out, log, header, previous_header, matches, stages);
        if params.debug_image {
            self.debug_image(frame, header, detection, &drawn);
        }
        Some(n_matches)
    }

    /// Detects `frame` with the open processor, guarded against panics.
    fn detect(
        &mut self,
        frame: &mut Frame,
        params: &NodeParams,
        detection: &mut Detection,
        stages: &mut StageTimes,
    ) -> Result<(), BackendFault> {
        let Some((_, processor)) = self.processor.as_mut() else {
            return Err(BackendFault::Error("no backend open".into()));
        };
        let source = match frame.gray.as_mut().and_then(PooledFrame::frame) {
            Some(f) => Source::Frame(f),
            None => Source::Message(&frame.image.data),
        };
        let gray = &mut self.gray;
        let layout = &frame.layout;
        guarded(|| {
            detect_frame(
                processor.as_mut(),
                source,
                layout,
                params,
                gray,
                detection,
                stages,
            )
        })
    }

    /// Matches `detection` against the previous frame (nothing to match for the first frame
    /// after a start or a backend change).
    fn match_frame(
        &mut self,
        detection: &mut Detection,
        params: &NodeParams,
    ) -> Result<(Vec<MatchMsg>, Header), BackendFault> {
        let (Some(prev), Some((_, processor))) = (&mut self.previous, self.processor.as_mut())
        else {
            return Ok((Vec::new(), Header::default()));
        };
        let matches = guarded(|| processor.match_frames(detection, &mut prev.detection, params))?;
        Ok((matches, prev.header.clone()))
    }

    /// Draws and publishes the debug picture. The gray pixels are in the input frame (reached
    /// after the detection's upload from it), or in the message; none only when the frame's
    /// device failed.
    fn debug_image(
        &mut self,
        frame: &mut Frame,
        header: &Header,
        detection: &Detection,
        matches: &[MatchMsg],
    ) {
        let layout = &frame.layout;
        let pixels = match frame.gray.as_mut().and_then(PooledFrame::frame) {
            Some(f) => crate::processor::frame_pixels(f, layout.width, layout.height)
                .ok()
                .map(|p| &*p),
            None => Some(convert::gray_view(
                &frame.image.data,
                layout,
                &mut self.gray,
            )),
        };
        let Some(pixels) = pixels else {
            return;
        };
        let previous = self
            .previous
            .as_ref()
            .map(|p| p.detection.keypoints.as_slice())
            .unwrap_or(&[]);
        let picture = DebugPicture {
            pixels,
            width: layout.width,
            height: layout.height,
            keypoints: &detection.keypoints,
            previous,
            matches,
        };
        publish::debug_image(self.out, self.log, header, &picture, &mut self.debug_rgb);
    }

    /// Counts the frame and keeps its times for the diagnostics. First maps the next frame's
    /// keypoints buffer now that this one is out (not in its time): only when none is free,
    /// i.e. before a reliable writer's first cleaning hands buffers back, or past the pool's
    /// byte limit.
    fn record(
        &self,
        detection: &Detection,
        n_matches: usize,
        ms: f64,
        stages: StageTimes,
        capacity: usize,
    ) {
        let buffers = &self.out.buffers;
        buffers.prepare(capacity);
        let mut s = lock(&self.shared.stats);
        s.output_buffers_new = buffers.new_buffers();
        s.output_buffers_prepared = buffers.prepared_buffers();
        s.output_buffers_kept_bytes = buffers.kept_bytes();
        s.processed += 1;
        s.last_keypoints = detection.keypoints.len();
        s.last_matches = n_matches;
        s.last_processing_ms = ms;
        s.last_stages = stages;
        // Bounded: the diagnostics task clears them every second; the cap guards against a
        // stalled executor.
        if s.window.len() < 100_000 {
            s.window.push(ms);
            s.stage_window.push(stages);
        }
    }

    /// Makes input frames of `len` pixels for the receive thread after the frame is out, so
    /// that making frames (page-locking memory takes milliseconds) never delays one; at most
    /// once per backend and frame size.
    fn refill_frames(&mut self, len: usize) {
        let Some((_, processor)) = self.processor.as_mut() else {
            return;
        };
        let frames = &self.shared.frames;
        let Err(e) = guarded(|| frames.refill(len, |capacity| processor.input_frame(capacity)))
        else {
            return;
        };
        if e.panicked() {
            self.processor = None;
            self.shared.frames.reset();
        }
        self.log.log(
            LogLevel::Warn,
            &format!(
                "no input frames from the backend ({}): frames are received into the node's \
                 memory and copied once more",
                e.text()
            ),
        );
    }
}
