//! The command-line arguments (clap derive) shared by the subcommands, and their conversion into
//! the library's validated parameter types.

use std::path::PathBuf;

use clap::Args;
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use surfcl_core::config::{Named, ThresholdUnit};
use surfcl_core::matcher::MatchConfig;
use surfcl_core::surf::Precision;

use surfcl_gpu::Error;
use surfcl_gpu::backend::{
    BackendChoice, DEFAULT_MAX_KEYPOINTS, DescriptorKind, DetectParams, DetectorKind,
};

/// A clap parser for an option spelled with the shared names of `surfcl_core::config` (the
/// node's string parameters take the same words).
fn named<T: Named + Send + Sync>() -> impl TypedValueParser<Value = T> {
    PossibleValuesParser::new(
        T::ALL
            .iter()
            .map(|&(_, name, help)| PossibleValue::new(name).help(help)),
    )
    .try_map(|name| T::from_name(&name))
}

/// Options of detection, shared by `detect`, `match`, `eval` and `bench`.
#[derive(Debug, Clone, Args)]
pub struct DetectOptions {
    /// Interest point detector.
    #[arg(long, value_parser = named::<DetectorKind>(), default_value = "surf")]
    pub detector: DetectorKind,
    /// Where the work runs: auto (an OpenCL GPU or accelerator, else the native CPU backend),
    /// opencl (any OpenCL device, PoCL included), or cpu (the native CPU backend).
    #[arg(long, value_parser = named::<BackendChoice>(), default_value = "auto")]
    pub backend: BackendChoice,
    /// OpenCL device: an index from `surfcl devices` or a name substring.
    #[arg(long, env = "SURFCL_DEVICE")]
    pub device: Option<String>,
    /// Storage of the SURF response maps (u8: 8-bit packed).
    #[arg(long, value_parser = named::<Precision>(), default_value = "f32")]
    pub precision: Precision,
    /// Upright SURF: no orientation assignment (faster; not rotation invariant).
    #[arg(long)]
    pub upright: bool,
    /// Detector threshold. SURF: Hessian response in OpenSURF units (default 0.0004). Harris:
    /// an absolute threshold on R (default: 1% of the image's largest response).
    #[arg(long, conflicts_with = "relative_threshold")]
    pub threshold: Option<f32>,
    /// Harris only: the threshold as a fraction in (0, 1] of the image's largest response (the
    /// meaning the ROS node's `threshold` parameter has; default 0.01).
    #[arg(long)]
    pub relative_threshold: Option<f32>,
    /// Number of SURF octaves (1..=6, default 4).
    #[arg(long)]
    pub octaves: Option<u8>,
    /// SURF sample step of the first octave, 1 or 2 (default 2; doubles each octave). Step 1
    /// samples every pixel in octave 1, as OpenCV's SURF does: more, smaller keypoints.
    #[arg(long)]
    pub sample_step: Option<u8>,
    /// Keep at most this many keypoints (the strongest).
    #[arg(long, default_value_t = DEFAULT_MAX_KEYPOINTS)]
    pub max_keypoints: usize,
    /// Print the time of every stage (OpenCL: device times from profiling queues, which cost
    /// time on NVIDIA's OpenCL; `bench` always profiles its per-stage pass, and its streams
    /// only with this flag).
    #[arg(long)]
    pub profile: bool,
}

impl DetectOptions {
    /// The backend choice.
    pub fn backend_choice(&self) -> BackendChoice {
        self.backend
    }

    /// The validated detection parameters (`descriptor` is the matcher's representation).
    pub fn params(&self, descriptor: DescriptorKind) -> Result<DetectParams, Error> {
        let mut params = DetectParams {
            detector: self.detector,
            max_keypoints: self.max_keypoints,
            descriptor,
            ..DetectParams::default()
        };
        params.surf.precision = self.precision;
        params.surf.upright = self.upright;
        if let Some(octaves) = self.octaves {
            params.surf.octaves = octaves;
        }
        if let Some(step) = self.sample_step {
            params.surf.init_sample_step = step;
        }
        if let Some(t) = self.threshold {
            params.set_threshold(t, ThresholdUnit::Absolute);
        }
        if let Some(f) = self.relative_threshold {
            if self.detector != DetectorKind::Harris {
                return Err(Error::InvalidArgument(
                    "--relative-threshold applies to --detector harris only".into(),
                ));
            }
            params.set_threshold(f, ThresholdUnit::Relative);
        }
        // Bad option values are usage errors (exit 2), whichever check caught them.
        params
            .validate()
            .map_err(|e| Error::InvalidArgument(format!("invalid detection option: {e}")))?;
        Ok(params)
    }
}

/// Options of matching, shared by `match` and `eval`.
#[derive(Debug, Clone, Args)]
pub struct MatchOptions {
    /// Descriptor representation compared by the matcher.
    #[arg(long, value_parser = named::<DescriptorKind>(), default_value = "f32")]
    pub descriptor: DescriptorKind,
    /// Ratio test on distances: keep when nearest < ratio * second nearest (default 0.8).
    #[arg(long)]
    pub ratio: Option<f32>,
    /// Keep only mutual nearest neighbours.
    #[arg(long)]
    pub cross_check: bool,
    /// Reject matches farther than this descriptor distance.
    #[arg(long)]
    pub max_distance: Option<f32>,
    /// Do not require equal signs of the Laplacian.
    #[arg(long)]
    pub no_sign_test: bool,
}

impl MatchOptions {
    /// The descriptor representation.
    pub fn descriptor_kind(&self) -> DescriptorKind {
        self.descriptor
    }

    /// The validated matcher configuration.
    pub fn config(&self) -> Result<MatchConfig, Error> {
        let mut config = MatchConfig::default();
        if let Some(r) = self.ratio {
            config.ratio = r;
        }
        config.cross_check = self.cross_check;
        config.sign_test = !self.no_sign_test;
        if let Some(d) = self.max_distance {
            config.max_distance = Some(d);
        }
        config
            .validate()
            .map_err(|e| Error::InvalidArgument(format!("invalid match option: {e}")))?;
        Ok(config)
    }
}

/// Where a JSON report goes: a file, or stdout for `-`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JsonTarget {
    /// Standard output (then the human summary goes to stderr, so stdout stays valid JSON).
    Stdout,
    /// A file.
    File(PathBuf),
}

impl JsonTarget {
    /// Parses `-` or a path.
    pub fn from_arg(arg: &Option<PathBuf>) -> Option<Self> {
        arg.as_ref().map(|p| {
            if p.as_os_str() == "-" {
                JsonTarget::Stdout
            } else {
                JsonTarget::File(p.clone())
            }
        })
    }
}

/// An image size `WIDTHxHEIGHT` of `--sizes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageSize {
    /// Width in pixels.
    pub width: usize,
    /// Height in pixels.
    pub height: usize,
}

impl std::str::FromStr for ImageSize {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (w, h) = s
            .split_once(['x', 'X'])
            .ok_or_else(|| format!("`{s}` is not WIDTHxHEIGHT"))?;
        let parse = |v: &str| {
            v.trim()
                .parse::<usize>()
                .map_err(|_| format!("`{s}` is not WIDTHxHEIGHT"))
        };
        let (width, height) = (parse(w)?, parse(h)?);
        surfcl_core::image::check_dimensions(width, height).map_err(|e| format!("`{s}`: {e}"))?;
        Ok(ImageSize { width, height })
    }
}

/// Largest `bench --frames`: per-frame timings are kept in memory, and 100000 frames of the
/// largest size take hours already.
pub const MAX_BENCH_FRAMES: u64 = 100_000;

/// The arguments of `surfcl bench` (run by the `bench` module).
#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    /// Frame sizes to run, comma separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "640x480,1280x960,1920x1080"
    )]
    pub sizes: Vec<ImageSize>,
    /// Frames per size (after one warm-up frame), 1..=100000; the CPU backend, when it is only
    /// the reference of an OpenCL device, runs at most 5.
    #[arg(long, default_value_t = 20,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=MAX_BENCH_FRAMES))]
    pub frames: usize,
    /// Write the results as JSON to FILE (`-`: stdout).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Stream frames (overlap upload, compute and download) instead of one frame at a time.
    #[arg(long)]
    pub stream: bool,
    /// Detection options (backend, device, detector, threshold, ...).
    #[command(flatten)]
    pub detect: DetectOptions,
}
