//! The registry of OpenCL detectors: [`DetectorConfig`] says which detector and for what, and
//! [`Detector`] is the public handle that runs it (the backend, the streams and `surfcl bench`
//! all open detectors through it).
//!
//! A detector is one file: its kernels behind `frame::DetectorKernels` and its configuration
//! behind `frame::DetectorSetup` (see `surf.rs`, `harris.rs`). Registering it here is a variant
//! of [`DetectorConfig`], its arms in `setup`/`limits_mut`, and its [`DetectorKind`] in
//! [`DetectorConfig::for_params`] when the front ends can choose it.

use surfcl_core::GrayImage;

use super::device::select;
use super::error::OpenClError;
use super::frame::{
    DetectOutput, DetectorKernels, DetectorSetup, PinnedFrame, run_frame, run_frame_into,
    run_input_frame, run_pinned_frame,
};
use super::gpu::Gpu;
use super::harris::HarrisPipelineConfig;
use super::surf::SurfPipelineConfig;
use crate::backend::{DetectParams, DetectorKind};

/// Which detector, for what frames and capacity.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DetectorConfig {
    /// SURF (the [`SurfPipeline`] of this configuration).
    Surf(SurfPipelineConfig),
    /// Harris corners with upright SURF-64 descriptors at the fixed scale (the
    /// [`HarrisPipeline`] of this configuration).
    Harris(HarrisPipelineConfig),
}

impl DetectorConfig {
    /// The detector that `params` choose (SURF or Harris, their configuration and keypoint
    /// capacity), for frames up to `max_width x max_height`, with the default work-group sizes.
    pub fn for_params(params: &DetectParams, max_width: usize, max_height: usize) -> Self {
        match params.detector {
            DetectorKind::Surf => Self::Surf(SurfPipelineConfig {
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

    /// The detector's own configuration, through what every detector's configuration offers.
    fn setup(&self) -> &dyn DetectorSetup {
        match self {
            Self::Surf(c) => c,
            Self::Harris(c) => c,
        }
    }

    /// The fields every detector's configuration has: the largest frame's width and height, and
    /// the work-items per group (`None`: the detector's defaults).
    fn limits_mut(&mut self) -> (&mut usize, &mut usize, &mut Option<usize>) {
        match self {
            Self::Surf(c) => (&mut c.max_width, &mut c.max_height, &mut c.local_size),
            Self::Harris(c) => (&mut c.max_width, &mut c.max_height, &mut c.local_size),
        }
    }

    /// The largest frame (width, height).
    pub fn max_size(&self) -> (usize, usize) {
        // The limits are reached mutably only: read them from a copy.
        let mut config = *self;
        let (max_width, max_height, _) = config.limits_mut();
        (*max_width, *max_height)
    }

    /// The same detector for frames up to `max_width x max_height`.
    pub fn with_max_size(mut self, max_width: usize, max_height: usize) -> Self {
        let (w, h, _) = self.limits_mut();
        (*w, *h) = (max_width, max_height);
        self
    }

    /// The same detector with `local_size` work-items per group (results do not depend on it).
    pub fn with_local_size(mut self, local_size: Option<usize>) -> Self {
        *self.limits_mut().2 = local_size;
        self
    }

    /// Whether both configurations detect the same way (they may differ in the frame size).
    pub fn same_detector(&self, other: &Self) -> bool {
        let (w, h) = self.max_size();
        *self == other.with_max_size(w, h)
    }

    /// Opens the detector's kernels on `gpu`.
    fn open(&self, gpu: Gpu) -> Result<Box<dyn DetectorKernels>, OpenClError> {
        self.setup().open(gpu)
    }
}

/// A detector on one OpenCL device (SURF or Harris), reused for every frame: the public handle
/// of the detector registry ([`DetectorConfig`]).
#[derive(Debug)]
pub struct Detector {
    kernels: Box<dyn DetectorKernels>,
    config: DetectorConfig,
}

impl Detector {
    /// Opens `config` on the device chosen by `spec` (an index or a name substring, see
    /// `opencl::open`).
    pub fn open(spec: Option<&str>, config: DetectorConfig) -> Result<Self, OpenClError> {
        Self::new(Gpu::new(select(spec)?)?, config)
    }

    pub(crate) fn new(gpu: Gpu, config: DetectorConfig) -> Result<Self, OpenClError> {
        Ok(Self {
            kernels: config.open(gpu)?,
            config,
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
    /// pageable memory: the upload becomes a DMA. Made on first use, as large as the detector's largest frame; the call waits for
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
        run_input_frame(self.kernels.as_mut(), width, height, out)
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
        run_pinned_frame(self.kernels.as_mut(), frame, width, height, out)
    }

    /// Blocking readbacks of results this detector has made (a frame normally takes one; a
    /// second when it keeps more records than the first readback took).
    pub fn readbacks(&self) -> u64 {
        self.kernels.io().readbacks
    }

    /// What the detector was made for.
    pub fn config(&self) -> DetectorConfig {
        self.config
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

#[cfg(test)]
mod tests {
    use surfcl_core::describe::describe_all;
    use surfcl_core::integral::integral_len;
    use surfcl_core::surf::{self, SurfConfig};
    use surfcl_core::{IntegralImage, Keypoint, KeypointBuffer, KeypointSink};

    use super::*;
    use crate::opencl::frame::SPLIT_MIN_RECORDS;

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

        let config = DetectorConfig::Surf(SurfPipelineConfig {
            max_width: w,
            max_height: h,
            surf,
            max_keypoints: max_kp,
            local_size: None,
        });
        let mut detector = Detector::open(None, config).unwrap_or_else(|e| {
            panic!("this test needs an OpenCL device (CI: apt-get install pocl-opencl-icd): {e}")
        });
        assert!(detector.kernels().io().has_transfer_queue());
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
            let split = detector.kernels().io().next_split();
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
}
