//! [`OpenClBackend`]: the OpenCL pipeline and matcher behind the [`Backend`] seam.

use surfcl_core::describe::to_q7;
use surfcl_core::matcher::{Match, MatchConfig};
use surfcl_core::{DescriptorQ7, GrayImage};

use super::OpenClError;
use super::harris::{HarrisPipeline, HarrisPipelineConfig};
use super::matcher::{GpuMatcher, MatchTimings};
use super::pipeline::{Gpu, Pipeline, PipelineConfig};
use crate::backend::{Backend, DescriptorKind, DetectParams, DetectorKind, Features};
use crate::error::Error;

/// The OpenCL backend: one device, one context and queue, a SURF [`Pipeline`] and a
/// [`HarrisPipeline`] (each made on first use, rebuilt only when a frame is larger than it was
/// made for or the parameters change), and a [`GpuMatcher`].
///
/// Harris corners get upright SURF-64 descriptors at the configured fixed scale, as on the CPU
/// backend.
#[derive(Debug)]
pub struct OpenClBackend {
    gpu: Gpu,
    pipeline: Option<Pipeline>,
    harris: Option<HarrisPipeline>,
    matcher: Option<GpuMatcher>,
    local_size: Option<usize>,
}

impl OpenClBackend {
    /// Opens the device chosen by `spec` (see [`super::open`]).
    pub fn new(spec: Option<&str>) -> Result<Self, OpenClError> {
        Ok(Self {
            gpu: Gpu::new(super::select(spec)?)?,
            pipeline: None,
            harris: None,
            matcher: None,
            local_size: None,
        })
    }

    /// Uses `local_size` work-items per group in the pipelines made from now on (results do not
    /// depend on it; tests use it to check that).
    pub fn with_local_size(mut self, local_size: usize) -> Self {
        self.local_size = Some(local_size);
        self.pipeline = None;
        self.harris = None;
        self
    }

    /// Device memory held by the current pipelines (SURF and Harris), bytes (0 before the first
    /// frame).
    pub fn device_bytes(&self) -> u64 {
        self.pipeline.as_ref().map_or(0, Pipeline::device_bytes)
            + self.harris.as_ref().map_or(0, HarrisPipeline::device_bytes)
    }

    /// The Harris pipeline for a `width x height` frame with `params`, made or remade when
    /// needed (the same growth rule as the SURF pipeline).
    fn harris_for(
        &mut self,
        width: usize,
        height: usize,
        params: &DetectParams,
    ) -> Result<&mut HarrisPipeline, OpenClError> {
        let fits = self.harris.as_ref().is_some_and(|p| {
            let c = p.config();
            c.max_width >= width
                && c.max_height >= height
                && c.harris == params.harris
                && c.max_keypoints == params.max_keypoints
        });
        if !fits {
            let (w, h) = match &self.harris {
                Some(p) if p.config().harris == params.harris => (
                    width.max(p.config().max_width),
                    height.max(p.config().max_height),
                ),
                _ => (width, height),
            };
            // Drop the old buffers first so the device never holds both.
            self.harris = None;
            let (w, h) = if surfcl_core::image::check_dimensions(w, h).is_ok() {
                (w, h)
            } else {
                (width, height)
            };
            self.harris = Some(HarrisPipeline::new(
                self.gpu.clone(),
                HarrisPipelineConfig {
                    local_size: self.local_size,
                    ..HarrisPipelineConfig::new(w, h, params.harris, params.max_keypoints)
                },
            )?);
        }
        self.harris
            .as_mut()
            .ok_or_else(|| OpenClError::Unsupported("Harris pipeline missing".into()))
    }

    /// The pipeline for a `width x height` frame with `params`, made or remade when needed.
    fn pipeline_for(
        &mut self,
        width: usize,
        height: usize,
        params: &DetectParams,
    ) -> Result<&mut Pipeline, OpenClError> {
        let fits = self.pipeline.as_ref().is_some_and(|p| {
            let c = p.config();
            c.max_width >= width
                && c.max_height >= height
                && c.surf == params.surf
                && c.max_keypoints == params.max_keypoints
        });
        if !fits {
            // Grow to cover both the old and the new frame size, so alternating sizes do not
            // rebuild every frame.
            let (w, h) = match &self.pipeline {
                Some(p) if p.config().surf == params.surf => (
                    width.max(p.config().max_width),
                    height.max(p.config().max_height),
                ),
                _ => (width, height),
            };
            // Drop the old buffers first so the device never holds both.
            self.pipeline = None;
            let w_h = if surfcl_core::image::check_dimensions(w, h).is_ok() {
                (w, h)
            } else {
                (width, height)
            };
            self.pipeline = Some(Pipeline::new(
                self.gpu.clone(),
                PipelineConfig {
                    max_width: w_h.0,
                    max_height: w_h.1,
                    surf: params.surf,
                    max_keypoints: params.max_keypoints,
                    local_size: self.local_size,
                },
            )?);
        }
        self.pipeline
            .as_mut()
            .ok_or_else(|| OpenClError::Unsupported("pipeline missing".into()))
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
        let out = match params.detector {
            DetectorKind::Harris => self
                .harris_for(image.width(), image.height(), params)?
                .detect(image)?,
            DetectorKind::Surf => self
                .pipeline_for(image.width(), image.height(), params)?
                .detect(image)?,
        };
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
