//! [`OpenClBackend`]: the OpenCL detectors and matcher behind the [`Backend`] seam.

use std::mem::discriminant;

use surfcl_core::describe::to_q7;
use surfcl_core::matcher::{Match, MatchConfig};
use surfcl_core::{DescriptorQ7, GrayImage};

use super::OpenClError;
use super::frame::{DetectOutput, Detector, DetectorConfig};
use super::gpu::Gpu;
use super::matcher::{GpuMatcher, MatchTimings};
use crate::backend::{Backend, DescriptorKind, DetectParams, Features};
use crate::error::Error;

/// The OpenCL backend: one device, one context and queue, at most one [`Detector`] per kind
/// (SURF, Harris; each made on first use, rebuilt only when a frame is larger than it was made
/// for or the parameters change), and a [`GpuMatcher`].
///
/// Harris corners get upright SURF-64 descriptors at the configured fixed scale, as on the CPU
/// backend.
#[derive(Debug)]
pub struct OpenClBackend {
    gpu: Gpu,
    detectors: Vec<Detector>,
    matcher: Option<GpuMatcher>,
    local_size: Option<usize>,
}

impl OpenClBackend {
    /// Opens the device chosen by `spec` (see [`super::open`]).
    pub fn new(spec: Option<&str>) -> Result<Self, OpenClError> {
        Ok(Self {
            gpu: Gpu::new(super::select(spec)?)?,
            detectors: Vec::new(),
            matcher: None,
            local_size: None,
        })
    }

    /// Uses `local_size` work-items per group in the detectors made from now on (results do not
    /// depend on it; tests use it to check that).
    pub fn with_local_size(mut self, local_size: usize) -> Self {
        self.local_size = Some(local_size);
        self.detectors.clear();
        self
    }

    /// Device memory held by the current detectors, bytes (0 before the first frame).
    pub fn device_bytes(&self) -> u64 {
        self.detectors.iter().map(Detector::device_bytes).sum()
    }

    /// The detector for a `width x height` frame with `params`, made or remade when needed: a
    /// remade detector of the same configuration grows to cover both the old and the new frame
    /// size, so alternating sizes do not rebuild every frame.
    fn detector_for(
        &mut self,
        width: usize,
        height: usize,
        params: &DetectParams,
    ) -> Result<&mut Detector, OpenClError> {
        let wanted =
            DetectorConfig::for_params(params, width, height).with_local_size(self.local_size);
        let mut size = (width, height);
        if let Some(i) = self
            .detectors
            .iter()
            .position(|d| discriminant(&d.config()) == discriminant(&wanted))
        {
            let current = self.detectors[i].config();
            let (max_w, max_h) = current.max_size();
            if current.same_detector(&wanted) {
                if max_w >= width && max_h >= height {
                    return Ok(&mut self.detectors[i]);
                }
                size = (width.max(max_w), height.max(max_h));
            }
            // Drop the old buffers first so the device never holds both.
            self.detectors.swap_remove(i);
        }
        if surfcl_core::image::check_dimensions(size.0, size.1).is_err() {
            size = (width, height);
        }
        let config = wanted.with_max_size(size.0, size.1);
        self.detectors
            .push(Detector::new(self.gpu.clone(), config)?);
        self.detectors
            .last_mut()
            .ok_or_else(|| OpenClError::Unsupported("detector missing".into()))
    }
}

impl Backend for OpenClBackend {
    fn name(&self) -> &'static str {
        "opencl"
    }

    fn device(&self) -> String {
        let i = &self.gpu.selected.info;
        format!("{} / {} ({})", i.platform, i.name, i.kind)
    }

    fn detect(&mut self, image: &GrayImage<'_>, params: &DetectParams) -> Result<Features, Error> {
        let mut features = Features::default();
        self.detect_into(image, params, &mut features)?;
        Ok(features)
    }

    /// Fills `out`'s keypoint and descriptor arrays in place ([`Detector::detect_into`]): no
    /// allocation for them once they are large enough.
    fn detect_into(
        &mut self,
        image: &GrayImage<'_>,
        params: &DetectParams,
        out: &mut Features,
    ) -> Result<(), Error> {
        params.validate()?;
        let mut frame = DetectOutput {
            keypoints: std::mem::take(&mut out.keypoints),
            descriptors: std::mem::take(&mut out.descriptors),
            ..DetectOutput::default()
        };
        let result = self
            .detector_for(image.width(), image.height(), params)
            .and_then(|detector| detector.detect_into(image, &mut frame));
        // The arrays go back to the caller even on failure (their memory is what it reuses).
        out.keypoints = frame.keypoints;
        out.descriptors = frame.descriptors;
        result?;
        out.width = image.width();
        out.height = image.height();
        out.dropped = frame.dropped;
        out.timings = frame.timings;
        Ok(())
    }

    fn match_features(
        &mut self,
        query: &Features,
        train: &Features,
        config: &MatchConfig,
        descriptor: DescriptorKind,
    ) -> Result<Vec<Match>, Error> {
        config.validate()?;
        if self.matcher.is_none() {
            self.matcher = Some(GpuMatcher::new(self.gpu.clone())?);
        }
        let Some(matcher) = self.matcher.as_mut() else {
            return Err(OpenClError::Unsupported("matcher missing".into()).into());
        };
        let mut timings = MatchTimings::default();
        let matches = match descriptor {
            DescriptorKind::F32 => matcher.match_f32(
                &query.keypoints,
                &query.descriptors,
                &train.keypoints,
                &train.descriptors,
                config,
                &mut timings,
            )?,
            DescriptorKind::Q7 => {
                let qd: Vec<DescriptorQ7> = query.descriptors.iter().map(to_q7).collect();
                let td: Vec<DescriptorQ7> = train.descriptors.iter().map(to_q7).collect();
                matcher.match_q7(
                    &query.keypoints,
                    &qd,
                    &train.keypoints,
                    &td,
                    config,
                    &mut timings,
                )?
            }
        };
        Ok(matches)
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use surfcl_core::Keypoint;

    use super::*;
    use crate::io::load_gray;

    /// A `w x h` crop of boat image 1 at (`x0`, `y0`).
    fn boat_crop(x0: usize, y0: usize, w: usize, h: usize) -> Vec<u8> {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/oxford-boat/img1.pgm");
        let boat = load_gray(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        (0..h)
            .flat_map(|y| {
                boat.pixels[(y0 + y) * boat.width + x0..][..w]
                    .iter()
                    .copied()
            })
            .collect()
    }

    /// An OpenCL backend; fails (rather than passing vacuously) without an OpenCL device.
    fn backend() -> OpenClBackend {
        OpenClBackend::new(None).unwrap_or_else(|e| {
            panic!("this test needs an OpenCL device (CI: apt-get install pocl-opencl-icd): {e}")
        })
    }

    #[test]
    fn detect_into_reuses_the_arrays_and_alternating_frames_read_back_once() {
        let (w, h) = (240, 180);
        let busy = boat_crop(300, 250, w, h);
        // The same picture, its left three quarters flat: far fewer keypoints.
        let mut plain = busy.clone();
        for row in plain.chunks_mut(w) {
            row[..3 * w / 4].fill(128);
        }
        let frames = [
            GrayImage::new(&busy, w, h).unwrap(),
            GrayImage::new(&plain, w, h).unwrap(),
        ];
        let params = DetectParams {
            max_keypoints: 2000,
            ..DetectParams::default()
        };
        params.validate().unwrap();
        let mut reference = backend();
        let expected: Vec<Features> = frames
            .iter()
            .map(|f| reference.detect(f, &params).unwrap())
            .collect();
        let (kept_busy, kept_plain) = (expected[0].keypoints.len(), expected[1].keypoints.len());
        assert!(
            kept_busy > super::super::frame::readback_hint(kept_plain, params.max_keypoints),
            "the pictures must differ enough to test the readback hint: {kept_busy} and {kept_plain} keypoints"
        );

        let mut backend = backend();
        // Arrays of another size and garbage everywhere: all must be replaced.
        let mut out = Features {
            width: 1,
            height: 1,
            keypoints: vec![Keypoint::default(); 3000],
            descriptors: vec![[0.5; 64]; 3000],
            dropped: 7,
            timings: vec![crate::backend::StageTiming {
                name: "stale".into(),
                ms: 1.0,
            }],
        };
        let capacity = out.descriptors.capacity();
        for i in 0..8 {
            let before = backend.detectors.first().map_or(0, Detector::readbacks);
            backend
                .detect_into(&frames[i % 2], &params, &mut out)
                .unwrap();
            let want = &expected[i % 2];
            assert_eq!(
                (out.width, out.height, out.dropped),
                (want.width, want.height, want.dropped)
            );
            assert_eq!(out.keypoints, want.keypoints, "frame {i}");
            assert_eq!(out.descriptors, want.descriptors, "frame {i}");
            // Device times exist only on profiling queues: whatever there is, it is this frame's.
            assert!(out.timings.iter().all(|t| t.name != "stale"));
            // Refilled in place: no array of its own size was allocated.
            assert_eq!(out.descriptors.capacity(), capacity, "frame {i}");
            let readbacks = backend.detectors.first().map_or(0, Detector::readbacks) - before;
            // The first busy frame after the first plain one is sized from both.
            if i >= 1 {
                assert_eq!(readbacks, 1, "frame {i} read back {readbacks} times");
            }
        }
    }
}
