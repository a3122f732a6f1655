//! The backend seam: the CLI (and the tests) run detection and matching through [`Backend`],
//! without knowing whether the work happens on the CPU reference ([`crate::cpu::CpuBackend`]) or
//! on an OpenCL device ([`crate::opencl::open`]); [`crate::open_backend`] picks one. This module
//! only defines the seam: the implementations depend on it, never the other way round.
//!
//! Both backends take the same validated [`DetectParams`] (the front-end configuration of
//! `surfcl_core::config`, re-exported here) and return the same [`Features`], so a test can run
//! one image through both and compare the outputs field by field.

pub use surfcl_core::config::{
    BackendChoice, DEFAULT_MAX_KEYPOINTS, DescriptorKind, DetectParams, DetectorKind,
    MAX_KEYPOINTS_LIMIT, Named,
};
use surfcl_core::matcher::{Match, MatchConfig};
use surfcl_core::{Descriptor, GrayImage, Keypoint};

use crate::error::Error;
pub use crate::error::InputAreaError;

/// Time spent in one stage of a backend, in milliseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct StageTiming {
    /// Stage name (for example "integral", "detect", "describe"; OpenCL: kernel names).
    pub name: String,
    /// Duration in milliseconds.
    pub ms: f64,
}

/// The result of detection on one image.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Features {
    /// Image width in pixels.
    pub width: usize,
    /// Image height in pixels.
    pub height: usize,
    /// Keypoints, strongest first (the core's canonical order, `Keypoint::rank_cmp`).
    pub keypoints: Vec<Keypoint>,
    /// One unit-length descriptor per keypoint, same order.
    pub descriptors: Vec<Descriptor>,
    /// Candidates not kept because `max_keypoints` was reached.
    pub dropped: usize,
    /// Time per stage, in execution order.
    pub timings: Vec<StageTiming>,
}

/// A detector + describer + matcher implementation (CPU reference or OpenCL).
///
/// Implementations keep their buffers between calls: after the first frame of a given size,
/// `detect` should not allocate device or scratch memory again.
pub trait Backend: Send {
    /// `"cpu"` or `"opencl"`.
    fn name(&self) -> &'static str;
    /// A human description of the device (CPU model/threads, or OpenCL platform and device).
    fn device(&self) -> String;
    /// Detects and describes the interest points of `image`. `params` must have been validated.
    fn detect(&mut self, image: &GrayImage<'_>, params: &DetectParams) -> Result<Features, Error>;
    /// [`Backend::detect`] into `out`, whose keypoint and descriptor arrays an implementation
    /// may refill in place: a caller that detects frame after frame hands back the `Features`
    /// of a frame it no longer needs, so that those arrays are not allocated again every frame.
    /// Every field of `out` is replaced on success (the result is the one `detect` returns); on
    /// error its contents are unspecified.
    ///
    /// The default calls `detect` (and drops `out`'s old arrays); the CPU and OpenCL backends
    /// refill them.
    fn detect_into(
        &mut self,
        image: &GrayImage<'_>,
        params: &DetectParams,
        out: &mut Features,
    ) -> Result<(), Error> {
        *out = self.detect(image, params)?;
        Ok(())
    }
    /// The backend's own memory for the pixels of one `width x height` frame (8-bit gray,
    /// row-major, no padding: exactly `width * height` bytes), for a caller that can write its
    /// frame there instead of into memory of its own; then [`Backend::detect_input_into`]
    /// detects it. `None` when the backend has no such area (the default; the CPU backend reads
    /// the caller's memory where it is): detect with [`Backend::detect_into`] then.
    ///
    /// The OpenCL backend hands out its detector's pinned input area: the upload becomes a DMA
    /// instead of the driver's copy of pageable memory (docs/BENCHMARKS.md). Errors when
    /// `params` are invalid or the size is outside the core's limits. Each call hands the area
    /// out for one frame, replacing any earlier one.
    fn input_area(
        &mut self,
        width: usize,
        height: usize,
        params: &DetectParams,
    ) -> Result<Option<&mut [u8]>, Error> {
        let _ = (width, height, params);
        Ok(None)
    }
    /// [`Backend::detect_into`] of the frame written into the area the last
    /// [`Backend::input_area`] call handed out, with the same size and `params`. Each written
    /// frame is detected once: a second call, a call after a detection from the caller's memory
    /// (which may replace the area) or with another size or detector is an
    /// [`InputAreaError`], as is any call on a backend without an area (the default).
    fn detect_input_into(
        &mut self,
        width: usize,
        height: usize,
        params: &DetectParams,
        out: &mut Features,
    ) -> Result<(), Error> {
        let _ = (width, height, params, out);
        Err(InputAreaError::Unsupported.into())
    }
    /// A frame of host memory of `capacity` bytes that this backend uploads from faster than
    /// from ordinary memory, for a caller that fills frames on one thread and detects them on
    /// another ([`InputFrame`]). `None` when the backend has none (the default; the CPU backend
    /// reads the caller's memory where it is).
    ///
    /// The OpenCL backend hands out pinned memory of its context (`opencl::PinnedFrame`), as
    /// many as asked for: unlike [`Backend::input_area`], which is one area handed out for one
    /// frame at a time, a frame is owned by the caller, can be written while the backend
    /// detects another one, and is detected by [`Backend::detect_frame_into`] any number of
    /// times. Allocating one page-locks memory (milliseconds): callers keep and reuse them.
    fn input_frame(&mut self, capacity: usize) -> Result<Option<Box<dyn InputFrame>>, Error> {
        let _ = capacity;
        Ok(None)
    }
    /// [`Backend::detect_into`] of the `width x height` gray frame held by the first
    /// `width * height` bytes of `frame` (row-major, no padding). `frame` may come from
    /// [`Backend::input_frame`] of this backend (the OpenCL backend then uploads it by DMA,
    /// without blocking the host while it runs) or from anywhere else: the default, and the
    /// OpenCL backend for a frame of another kind, detect its bytes as a [`GrayImage`]. The
    /// result is the one `detect_into` gives for the same pixels. Errors when the frame holds
    /// fewer than `width * height` bytes or the size is outside the core's limits.
    fn detect_frame_into(
        &mut self,
        frame: &mut dyn InputFrame,
        width: usize,
        height: usize,
        params: &DetectParams,
        out: &mut Features,
    ) -> Result<(), Error> {
        detect_frame_bytes(self, frame, width, height, params, out)
    }
    /// Matches `query` against `train` (2-NN with the tests of `config`), comparing descriptors
    /// in the `descriptor` representation.
    fn match_features(
        &mut self,
        query: &Features,
        train: &Features,
        config: &MatchConfig,
        descriptor: DescriptorKind,
    ) -> Result<Vec<Match>, Error>;
}

/// Host memory for one gray frame, made by [`Backend::input_frame`]: owned by the caller, so that
/// one thread can write a frame into it (a ROS node's receive thread converting a message
/// straight into it) while the backend detects another, then hand it to the thread that runs
/// [`Backend::detect_frame_into`].
///
/// A frame may still be read by the device after a detection returned an error; its memory is
/// reached only through [`InputFrame::pixels_mut`], which waits for that first.
pub trait InputFrame: Send + std::any::Any {
    /// Bytes the frame holds (at least the `capacity` it was asked for).
    fn capacity(&self) -> usize;
    /// The frame's memory, `capacity` bytes, after the last upload from it has completed.
    /// Errors when waiting for that upload fails (the device failed): the caller should then
    /// drop the frame.
    fn pixels_mut(&mut self) -> Result<&mut [u8], Error>;
}

/// [`Backend::detect_into`] of the gray frame in the first `width * height` bytes of `frame`,
/// whatever kind of frame it is: [`Backend::detect_frame_into`]'s default, and what a backend
/// does with frames it did not make.
pub fn detect_frame_bytes<B: Backend + ?Sized>(
    backend: &mut B,
    frame: &mut dyn InputFrame,
    width: usize,
    height: usize,
    params: &DetectParams,
    out: &mut Features,
) -> Result<(), Error> {
    let pixels = frame_pixels(frame, width, height)?;
    backend.detect_into(&GrayImage::new(pixels, width, height)?, params, out)
}

/// The first `width * height` bytes of `frame`, or why there are none.
pub fn frame_pixels(
    frame: &mut dyn InputFrame,
    width: usize,
    height: usize,
) -> Result<&mut [u8], Error> {
    surfcl_core::image::check_dimensions(width, height)?;
    let capacity = frame.capacity();
    frame
        .pixels_mut()?
        .get_mut(..width * height)
        .ok_or_else(|| {
            Error::InvalidArgument(format!(
                "a {width}x{height} frame does not fit an input frame of {capacity} bytes"
            ))
        })
}

// `Box<dyn Backend>` is itself a backend, so that a wrapper generic over `B: Backend` (the
// fault-injection wrapper of `fault.rs`) can wrap whatever `open_backend` returned. Every method
// is forwarded, the defaulted ones too: method calls on a `Box<dyn Backend>` resolve to this
// impl, and a default here would hide the boxed backend's own version (its in-place
// `detect_into`, its input area).
impl Backend for Box<dyn Backend> {
    fn name(&self) -> &'static str {
        (**self).name()
    }
    fn device(&self) -> String {
        (**self).device()
    }
    fn detect(&mut self, image: &GrayImage<'_>, params: &DetectParams) -> Result<Features, Error> {
        (**self).detect(image, params)
    }
    fn detect_into(
        &mut self,
        image: &GrayImage<'_>,
        params: &DetectParams,
        out: &mut Features,
    ) -> Result<(), Error> {
        (**self).detect_into(image, params, out)
    }
    fn input_area(
        &mut self,
        width: usize,
        height: usize,
        params: &DetectParams,
    ) -> Result<Option<&mut [u8]>, Error> {
        (**self).input_area(width, height, params)
    }
    fn detect_input_into(
        &mut self,
        width: usize,
        height: usize,
        params: &DetectParams,
        out: &mut Features,
    ) -> Result<(), Error> {
        (**self).detect_input_into(width, height, params, out)
    }
    fn input_frame(&mut self, capacity: usize) -> Result<Option<Box<dyn InputFrame>>, Error> {
        (**self).input_frame(capacity)
    }
    fn detect_frame_into(
        &mut self,
        frame: &mut dyn InputFrame,
        width: usize,
        height: usize,
        params: &DetectParams,
        out: &mut Features,
    ) -> Result<(), Error> {
        (**self).detect_frame_into(frame, width, height, params, out)
    }
    fn match_features(
        &mut self,
        query: &Features,
        train: &Features,
        config: &MatchConfig,
        descriptor: DescriptorKind,
    ) -> Result<Vec<Match>, Error> {
        (**self).match_features(query, train, config, descriptor)
    }
}
