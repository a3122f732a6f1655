//! What the node counts and times, as the diagnostics report it.

/// Where the time of one frame went, in milliseconds.
///
/// `transport_ms` runs on the publisher's clock from its `publish` call (its serialisation
/// included) to the moment the receive thread holds the deserialised message; it is only
/// meaningful when publisher and node share a clock (same machine). The other stages are the
/// node's own: `receive_convert` (the conversion into an input frame on receipt, part of
/// `deserialise`), `queue` (waiting in the slot), `convert` (view or colour conversion), `detect`
/// (the backend: upload, kernels, readback; `upload`, `kernels` and `readback` split it when the
/// backend reports them), `match`, `build` (the output messages) and `publish` (serialising and
/// handing keypoints and matches to DDS). `node_ms` is taken message to published outputs.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StageTimes {
    /// Publisher's `publish` to message taken (serialise, send, reassemble, deserialise).
    pub transport_ms: f64,
    /// Deserialising the image message (part of `transport_ms`).
    pub deserialise_ms: f64,
    /// Colour conversion or row compaction straight from the message's serialized bytes into
    /// one of the backend's input frames, on the receive thread (part of `deserialise_ms`; 0
    /// for a frame that found no free input frame, whose conversion is `convert_ms`).
    pub receive_convert_ms: f64,
    /// Waiting in the newest-frame slot for the processing thread.
    pub queue_ms: f64,
    /// Colour conversion or row compaction on the processing thread: into the backend's input
    /// area when it has one (then `mono8` is copied too), otherwise into the node's memory (near
    /// zero for tightly packed `mono8`, which is not copied). 0 for a frame converted into an
    /// input frame on receipt (`receive_convert_ms`).
    pub convert_ms: f64,
    /// The backend's detect call.
    pub detect_ms: f64,
    /// Upload part of `detect_ms` as the backend timed it (0 when it reports none).
    pub upload_ms: f64,
    /// Kernel part of `detect_ms` as the backend timed it (CPU: its stages).
    pub kernels_ms: f64,
    /// Readback part of `detect_ms` as the backend timed it.
    pub readback_ms: f64,
    /// Matching against the previous frame.
    pub match_ms: f64,
    /// Building the output messages.
    pub build_ms: f64,
    /// Serialising and handing the outputs to DDS.
    pub publish_ms: f64,
    /// Message taken to keypoints handed to DDS (queue + convert + detect + their build and
    /// publish): the node's share of a frame's keypoint latency, since keypoints are published
    /// before matching.
    pub keypoints_out_ms: f64,
    /// Message taken to outputs published (queue + convert + detect + match + build + publish).
    pub node_ms: f64,
}

impl StageTimes {
    /// `(name, value)` of every stage, in pipeline order (the diagnostics keys are
    /// `stage_<name>_ms_mean` / `_max`).
    pub fn named(&self) -> [(&'static str, f64); 14] {
        [
            ("transport", self.transport_ms),
            ("deserialise", self.deserialise_ms),
            ("receive_convert", self.receive_convert_ms),
            ("queue", self.queue_ms),
            ("convert", self.convert_ms),
            ("detect", self.detect_ms),
            ("upload", self.upload_ms),
            ("kernels", self.kernels_ms),
            ("readback", self.readback_ms),
            ("match", self.match_ms),
            ("build", self.build_ms),
            ("publish", self.publish_ms),
            ("keypoints_out", self.keypoints_out_ms),
            ("node", self.node_ms),
        ]
    }
}

/// Counters of the node, as the diagnostics report them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stats {
    /// Image messages received (valid or not).
    pub received: u64,
    /// Valid frames converted straight into one of the backend's input frames on receipt (the
    /// others went through the node's memory).
    pub received_into_frames: u64,
    /// Messages dropped by validation.
    pub malformed: u64,
    /// Valid frames replaced in the slot before they were processed.
    pub dropped_stale: u64,
    /// Image messages that never reached the node: gaps in a publisher's sequence numbers
    /// (lost on the way, e.g. a fragment of a large best-effort frame dropped by a full socket
    /// buffer, or replaced in the DDS history before they were taken).
    pub lost: u64,
    /// Frames processed and published.
    pub processed: u64,
    /// Frames whose processing failed in the backend (nothing was published for them).
    pub failed: u64,
    /// Why the last failed frame failed, naming the frame (empty while none has failed).
    pub last_error: String,
    /// Keypoints of the last processed frame.
    pub last_keypoints: usize,
    /// Matches of the last processed frame.
    pub last_matches: usize,
    /// Processing time of the last frame (ms).
    pub last_processing_ms: f64,
    /// Stage times of the last processed frame.
    pub last_stages: StageTimes,
    /// The backend in use.
    pub backend: String,
    /// `keypoints` messages encoded into a new buffer (fresh memory: a page fault per 4 KiB),
    /// none being free in the pool.
    pub output_buffers_new: u64,
    /// Buffers made and mapped ahead between frames, none of the size being free.
    pub output_buffers_prepared: u64,
    /// Bytes of buffers waiting in the pool after the last frame.
    pub output_buffers_kept_bytes: usize,
    /// Processing times since the last diagnostics report (ms).
    pub(super) window: Vec<f64>,
    /// Stage times since the last diagnostics report.
    pub(super) stage_window: Vec<StageTimes>,
}
