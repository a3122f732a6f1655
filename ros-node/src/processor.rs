//! The narrow seam between the node and the compute backend.
//!
//! The node only needs "detect and describe one grayscale image" and "match two frames". It
//! holds a [`Processor`] made by a [`ProcessorFactory`]; the production factory
//! ([`crate::backend::BackendFactory`]) wraps `surfcl_gpu::open_backend`, and tests can
//! plug in their own. A factory also vets parameter sets, so that a parameter change the backend
//! would refuse is rejected when it is set (with the reason) rather than failing frames later.

use surfcl_core::{Descriptor, GrayImage, Keypoint};

use crate::msg::MatchMsg;
use crate::params::NodeParams;

/// Detection result of one frame.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Detection {
    /// Image width.
    pub width: usize,
    /// Image height.
    pub height: usize,
    /// Keypoints, strongest first.
    pub keypoints: Vec<Keypoint>,
    /// One unit-length SURF-64 descriptor per keypoint.
    pub descriptors: Vec<Descriptor>,
    /// Candidates dropped because `max_keypoints` was reached.
    pub dropped: usize,
    /// The backend's own stage timings `(name, ms)`, when it reports them (OpenCL: `upload`,
    /// kernel names, `readback`; CPU: its stages). Diagnostics only.
    pub timings: Vec<(String, f64)>,
}

/// Why a [`ProcessorFactory`] refused parameters or could not open a backend, or why a
/// [`Processor`] failed on a frame. The node reports it (to a `set_parameters` caller, in the log
/// and in `diagnostics`) with the message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProcessorError {
    /// The parameters are not a configuration the backend accepts.
    #[error("{0}")]
    Parameters(String),
    /// The backend or device could not be opened.
    #[error("{0}")]
    Open(String),
    /// Detection or matching failed on a frame.
    #[error("{0}")]
    Frame(String),
}

impl From<&str> for ProcessorError {
    /// A frame failure with this message.
    fn from(message: &str) -> Self {
        ProcessorError::Frame(message.to_string())
    }
}

/// Detects, describes and matches. One instance is used by one thread at a time.
pub trait Processor: Send {
    /// A human description of the backend and device (for diagnostics).
    fn describe(&self) -> String;
    /// Detects and describes the interest points of `image` with `params`.
    fn detect(
        &mut self,
        image: &GrayImage<'_>,
        params: &NodeParams,
    ) -> Result<Detection, ProcessorError>;
    /// [`Processor::detect`] into `out`, whose keypoint and descriptor arrays an implementation
    /// may refill in place. The node hands back the detection of a frame it no longer needs
    /// (the one before the previous frame), so that the arrays (1.1 MiB at 4096 keypoints) are
    /// not allocated again every frame. Every field of `out` is replaced on success (the result
    /// is the one `detect` returns); on error or panic its contents are unspecified.
    ///
    /// The default calls `detect`.
    fn detect_into(
        &mut self,
        image: &GrayImage<'_>,
        params: &NodeParams,
        out: &mut Detection,
    ) -> Result<(), ProcessorError> {
        *out = self.detect(image, params)?;
        Ok(())
    }
    /// The backend's own memory for one `width x height` gray frame (exactly `width * height`
    /// bytes, row-major, no padding), for the node to convert a received image straight into:
    /// the OpenCL backend's pinned input area, from which the frame uploads by DMA instead of
    /// through the driver's copy of the node's memory. `None` when there is none (the default):
    /// the node then converts into memory of its own and calls [`Processor::detect_into`].
    fn input_area(
        &mut self,
        width: usize,
        height: usize,
        params: &NodeParams,
    ) -> Result<Option<&mut [u8]>, ProcessorError> {
        let _ = (width, height, params);
        Ok(None)
    }
    /// [`Processor::detect_into`] of the frame written into the area the last
    /// [`Processor::input_area`] call handed out, with the same size and `params`. Each
    /// written frame is detected once; anything else (no area handed out, another size, a
    /// second call, a processor without an area: the default) is an error, never a detection
    /// of stale pixels.
    fn detect_input_into(
        &mut self,
        width: usize,
        height: usize,
        params: &NodeParams,
        out: &mut Detection,
    ) -> Result<(), ProcessorError> {
        let _ = (width, height, params, out);
        Err(ProcessorError::Frame(
            "this processor has no input area; detect with detect_into".into(),
        ))
    }
    /// Memory for one gray frame of up to `capacity` bytes that this processor detects from
    /// faster than from the node's own ([`InputFrame`]): the OpenCL backend's pinned memory.
    /// The node keeps a few ([`crate::frames::InputFrames`]) and lets its receive thread
    /// convert each image message straight into one while this processor detects another,
    /// so a frame is copied once on the host, from the message. `None` when there is none
    /// (the default): frames then go through [`Processor::input_area`] or `detect_into`.
    fn input_frame(
        &mut self,
        capacity: usize,
    ) -> Result<Option<Box<dyn InputFrame>>, ProcessorError> {
        let _ = capacity;
        Ok(None)
    }
    /// [`Processor::detect_into`] of the `width x height` gray frame in the first
    /// `width * height` bytes of `frame` (one from [`Processor::input_frame`]; the default,
    /// for any frame, detects its bytes as a [`GrayImage`]). Same result as `detect_into` of
    /// those pixels; errors when the frame holds fewer bytes.
    fn detect_frame_into(
        &mut self,
        frame: &mut dyn InputFrame,
        width: usize,
        height: usize,
        params: &NodeParams,
        out: &mut Detection,
    ) -> Result<(), ProcessorError> {
        detect_frame_bytes(self, frame, width, height, params, out)
    }
    /// Matches `query` (current frame) against `train` (previous frame).
    ///
    /// Both are `&mut` so that an implementation can hand their arrays to a backend without
    /// copying them (moving them out and back); they must be as they were when it returns.
    /// After a panic their contents are unspecified (the node then drops both frames' roles:
    /// the processor is reopened and the next frame is matched against nothing).
    fn match_frames(
        &mut self,
        query: &mut Detection,
        train: &mut Detection,
        params: &NodeParams,
    ) -> Result<Vec<MatchMsg>, ProcessorError>;
}

/// Makes [`Processor`]s and vets parameter sets.
pub trait ProcessorFactory: Send + Sync {
    /// Checks that `params` is a configuration the backend accepts (beyond the per-parameter
    /// range checks of [`NodeParams::apply`]).
    fn check(&self, params: &NodeParams) -> Result<(), ProcessorError>;
    /// Opens the backend chosen by `params.backend` / `params.device`.
    fn open(&self, params: &NodeParams) -> Result<Box<dyn Processor>, ProcessorError>;
}

/// Memory for one gray frame, made by [`Processor::input_frame`] and owned by the node: the
/// receive thread writes a frame into it, the processing thread detects it
/// ([`Processor::detect_frame_into`]) and gives it back for another.
pub trait InputFrame: Send + std::any::Any {
    /// Bytes the frame holds.
    fn capacity(&self) -> usize;
    /// The frame's memory, `capacity` bytes, once nothing (no upload to a device) reads it any
    /// more. An error means the frame is unusable (its device failed): drop it.
    fn pixels_mut(&mut self) -> Result<&mut [u8], ProcessorError>;
}

/// [`Processor::detect_into`] of the gray frame in the first `width * height` bytes of `frame`,
/// whatever kind of frame it is: [`Processor::detect_frame_into`]'s default, and what a processor
/// does with frames it did not make.
pub fn detect_frame_bytes<P: Processor + ?Sized>(
    processor: &mut P,
    frame: &mut dyn InputFrame,
    width: usize,
    height: usize,
    params: &NodeParams,
    out: &mut Detection,
) -> Result<(), ProcessorError> {
    let pixels = frame_pixels(frame, width, height)?;
    let image =
        GrayImage::new(pixels, width, height).map_err(|e| ProcessorError::Frame(e.to_string()))?;
    processor.detect_into(&image, params, out)
}

/// The first `width * height` bytes of `frame`, or why there are none (an empty or oversized
/// frame, one that holds fewer bytes, or a failed device).
pub fn frame_pixels(
    frame: &mut dyn InputFrame,
    width: usize,
    height: usize,
) -> Result<&mut [u8], ProcessorError> {
    surfcl_core::image::check_dimensions(width, height)
        .map_err(|e| ProcessorError::Frame(e.to_string()))?;
    let capacity = frame.capacity();
    frame
        .pixels_mut()?
        .get_mut(..width * height)
        .ok_or_else(|| {
            ProcessorError::Frame(format!(
                "a {width}x{height} frame does not fit an input frame of {capacity} bytes"
            ))
        })
}
