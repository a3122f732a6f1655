//! The production [`ProcessorFactory`]: surfcl's backend seam (`surfcl_gpu::backend`), CPU
//! reference or OpenCL, with the node's parameters mapped onto [`DetectParams`] and
//! [`MatchConfig`]. Both are validated with the same `validate()` the CLI uses.

use std::any::Any;

use surfcl_core::GrayImage;
use surfcl_core::config::ThresholdUnit;
use surfcl_core::matcher::MatchConfig;
use surfcl_gpu::backend::{Backend, DetectParams, Features};
use surfcl_gpu::open_backend;

use crate::msg::MatchMsg;
use crate::params::NodeParams;
use crate::processor::{
    Detection, InputFrame, Processor, ProcessorError, ProcessorFactory, detect_frame_bytes,
};

/// Maps the node's parameters onto the backend's detection parameters (the shared
/// configuration of `surfcl_core::config`, validated as the command line validates it).
pub fn detect_params(p: &NodeParams) -> Result<DetectParams, ProcessorError> {
    let mut params = DetectParams {
        detector: p.detector,
        max_keypoints: usize::try_from(p.max_keypoints)
            .map_err(|_| parameters(format!("max_keypoints out of range: {}", p.max_keypoints)))?,
        descriptor: p.descriptor,
        ..DetectParams::default()
    };
    params.surf.octaves = u8::try_from(p.octaves)
        .map_err(|_| parameters(format!("octaves out of range: {}", p.octaves)))?;
    params.surf.upright = p.upright;
    params.surf.precision = p.precision;
    if p.threshold > 0.0 {
        // Harris responses have no fixed scale across images, so the node's threshold is
        // the relative one: a fraction of the frame's strongest response.
        params.set_threshold(p.threshold as f32, ThresholdUnit::Relative);
    }
    params.validate().map_err(|e| parameters(e.to_string()))?;
    Ok(params)
}

/// Maps the node's parameters onto the matcher configuration.
pub fn match_config(p: &NodeParams) -> Result<MatchConfig, ProcessorError> {
    let config = MatchConfig {
        ratio: p.ratio as f32,
        cross_check: p.cross_check,
        ..MatchConfig::default()
    };
    config.validate().map_err(|e| parameters(e.to_string()))?;
    Ok(config)
}

fn parameters(message: String) -> ProcessorError {
    ProcessorError::Parameters(message)
}

fn frame(e: surfcl_gpu::Error) -> ProcessorError {
    ProcessorError::Frame(e.to_string())
}

/// A backend's input frame ([`Backend::input_frame`]) as the node's [`InputFrame`].
struct BackendFrame(Box<dyn surfcl_gpu::backend::InputFrame>);

impl InputFrame for BackendFrame {
    fn capacity(&self) -> usize {
        self.0.capacity()
    }
    fn pixels_mut(&mut self) -> Result<&mut [u8], ProcessorError> {
        self.0.pixels_mut().map_err(frame)
    }
}

/// Opens surfcl backends.
#[derive(Debug, Default, Clone, Copy)]
pub struct BackendFactory;

impl ProcessorFactory for BackendFactory {
    fn check(&self, params: &NodeParams) -> Result<(), ProcessorError> {
        detect_params(params)?;
        match_config(params)?;
        Ok(())
    }

    fn open(&self, params: &NodeParams) -> Result<Box<dyn Processor>, ProcessorError> {
        let device = (!params.device.is_empty()).then_some(params.device.as_str());
        // The queues of the backend opened next profile or not (a process-wide setting, read
        // when they are made; the node opens its backends on one thread).
        surfcl_gpu::opencl::set_profiling(params.profile);
        let backend = open_backend(params.backend, device)
            .map_err(|e| ProcessorError::Open(e.to_string()))?;
        Ok(Box::new(BackendProcessor { backend }))
    }
}

/// A [`Processor`] over a `surfcl_gpu` [`Backend`].
pub struct BackendProcessor {
    backend: Box<dyn Backend>,
}

impl BackendProcessor {
    /// Wraps an opened backend.
    pub fn new(backend: Box<dyn Backend>) -> Self {
        Self { backend }
    }

    /// Runs `detect` on the backend with `params` mapped to [`DetectParams`], lending it
    /// `out`'s arrays and taking them back, also on failure.
    fn detect_with(
        &mut self,
        params: &NodeParams,
        out: &mut Detection,
        detect: impl FnOnce(
            &mut dyn Backend,
            &DetectParams,
            &mut Features,
        ) -> Result<(), surfcl_gpu::Error>,
    ) -> Result<(), ProcessorError> {
        let dp = detect_params(params)?;
        let mut f = take_features(out);
        let result = detect(self.backend.as_mut(), &dp, &mut f);
        let timings = std::mem::take(&mut f.timings);
        let (width, height, dropped) = (f.width, f.height, f.dropped);
        give_back(f, out);
        result.map_err(frame)?;
        out.width = width;
        out.height = height;
        out.dropped = dropped;
        out.timings = timings.into_iter().map(|t| (t.name, t.ms)).collect();
        Ok(())
    }
}

/// Moves the arrays of `d` into a [`Features`] (no copy); [`give_back`] returns them.
fn take_features(d: &mut Detection) -> Features {
    Features {
        width: d.width,
        height: d.height,
        keypoints: std::mem::take(&mut d.keypoints),
        descriptors: std::mem::take(&mut d.descriptors),
        dropped: d.dropped,
        timings: Vec::new(),
    }
}

fn give_back(f: Features, d: &mut Detection) {
    d.keypoints = f.keypoints;
    d.descriptors = f.descriptors;
}

impl Processor for BackendProcessor {
    fn describe(&self) -> String {
        format!("{}: {}", self.backend.name(), self.backend.device())
    }

    fn detect(
        &mut self,
        image: &GrayImage<'_>,
        params: &NodeParams,
    ) -> Result<Detection, ProcessorError> {
        let mut detection = Detection::default();
        self.detect_into(image, params, &mut detection)?;
        Ok(detection)
    }

    /// Lends `out`'s arrays to the backend's `detect_into` (the OpenCL backend refills them in
    /// place) and takes them back, also on failure.
    fn detect_into(
        &mut self,
        image: &GrayImage<'_>,
        params: &NodeParams,
        out: &mut Detection,
    ) -> Result<(), ProcessorError> {
        self.detect_with(params, out, |backend, dp, f| {
            backend.detect_into(image, dp, f)
        })
    }

    /// The backend's input area ([`Backend::input_area`]; the OpenCL backend's pinned memory).
    fn input_area(
        &mut self,
        width: usize,
        height: usize,
        params: &NodeParams,
    ) -> Result<Option<&mut [u8]>, ProcessorError> {
        let dp = detect_params(params)?;
        self.backend.input_area(width, height, &dp).map_err(frame)
    }

    /// [`Backend::detect_input_into`], lending `out`'s arrays as `detect_into` does.
    fn detect_input_into(
        &mut self,
        width: usize,
        height: usize,
        params: &NodeParams,
        out: &mut Detection,
    ) -> Result<(), ProcessorError> {
        self.detect_with(params, out, |backend, dp, f| {
            backend.detect_input_into(width, height, dp, f)
        })
    }

    /// One of the backend's input frames ([`Backend::input_frame`]; the OpenCL backend's pinned
    /// memory), wrapped for the node.
    fn input_frame(
        &mut self,
        capacity: usize,
    ) -> Result<Option<Box<dyn InputFrame>>, ProcessorError> {
        Ok(self
            .backend
            .input_frame(capacity)
            .map_err(frame)?
            .map(|f| Box::new(BackendFrame(f)) as Box<dyn InputFrame>))
    }

    /// [`Backend::detect_frame_into`] of a frame this processor's backend made (the OpenCL
    /// backend uploads it by DMA from where it is); any other frame as `detect_into` of its
    /// bytes. `out`'s arrays are lent as `detect_into` does.
    fn detect_frame_into(
        &mut self,
        input: &mut dyn InputFrame,
        width: usize,
        height: usize,
        params: &NodeParams,
        out: &mut Detection,
    ) -> Result<(), ProcessorError> {
        if let Some(BackendFrame(f)) = (input as &mut dyn Any).downcast_mut::<BackendFrame>() {
            return self.detect_with(params, out, |backend, dp, features| {
                backend.detect_frame_into(f.as_mut(), width, height, dp, features)
            });
        }
        detect_frame_bytes(self, input, width, height, params, out)
    }

    fn match_frames(
        &mut self,
        query: &mut Detection,
        train: &mut Detection,
        params: &NodeParams,
    ) -> Result<Vec<MatchMsg>, ProcessorError> {
        let config = match_config(params)?;
        let (q, t) = (take_features(query), take_features(train));
        let matches = self
            .backend
            .match_features(&q, &t, &config, params.descriptor);
        give_back(q, query);
        give_back(t, train);
        Ok(matches
            .map_err(frame)?
            .iter()
            .map(|m| MatchMsg {
                query: m.query,
                train: m.train,
                distance: m.distance,
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use surfcl_core::config::BackendChoice;
    use surfcl_gpu::opencl::{list_devices, preferred_device};

    use super::*;

    /// The node's `backend: auto` follows the library's rule: an OpenCL GPU or accelerator when
    /// the machine has one, else the native CPU backend, also where PoCL's CPU device is
    /// installed (the development machine and CI): PoCL runs only when asked for.
    #[test]
    fn auto_runs_an_opencl_gpu_or_else_the_native_cpu_backend() {
        let params = NodeParams {
            backend: BackendChoice::Auto,
            ..NodeParams::default()
        };
        let processor = BackendFactory.open(&params).unwrap();
        let devices = list_devices().unwrap_or_default();
        let want = match preferred_device(&devices) {
            Some(_) => "opencl: ",
            None => "cpu: ",
        };
        assert!(
            processor.describe().starts_with(want),
            "{} with devices {devices:?}",
            processor.describe()
        );
        // Asked for by name, OpenCL runs on whatever device there is, a CPU device included.
        if let Some(first) = devices.first() {
            let params = NodeParams {
                backend: BackendChoice::OpenCl,
                device: first.index.to_string(),
                ..NodeParams::default()
            };
            let processor = BackendFactory.open(&params).unwrap();
            assert!(
                processor.describe().starts_with("opencl: "),
                "{}",
                processor.describe()
            );
        }
    }
}
