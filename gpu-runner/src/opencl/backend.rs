//! [`OpenClBackend`]: the OpenCL detectors and matcher behind the [`Backend`] seam.

use std::mem::discriminant;

use surfcl_core::describe::to_q7;
use surfcl_core::matcher::{Match, MatchConfig};
use surfcl_core::{DescriptorQ7, GrayImage};

use super::OpenClError;
use super::frame::{Detector, DetectorConfig};
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
        params.validate()?;
        let out = self
            .detector_for(image.width(), image.height(), params)?
            .detect(image)?;
        Ok(Features {
            width: image.width(),
            height: image.height(),
            keypoints: out.keypoints,
            descriptors: out.descriptors,
            dropped: out.dropped,
            timings: out.timings,
        })
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
