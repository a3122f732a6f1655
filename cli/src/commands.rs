//! `surfcl devices`, `surfcl detect` and `surfcl match`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;

use super::args::{DetectOptions, MatchOptions};
use super::output::{Human, JsonOutput, OutputFile, WrittenFile, persist_all, stdout_line};
use crate::npz;
use surfcl_core::describe::to_q7;
use surfcl_core::homography::correct_matches;
use surfcl_gpu::backend::{DescriptorKind, Features};
use surfcl_gpu::open_backend;

use crate::draw::{self, MatchLine};
use crate::io::{STDIN_ARG, load_gray_or_stdin, load_homography};
use crate::report::{
    DetectReport, FORMAT_VERSION, KeypointJson, MatchReport, ParamsJson, matches_json, ratio,
};
use surfcl_core::config::Named;
use surfcl_gpu::Error;

/// `surfcl detect`.
#[derive(Debug, Clone, Args)]
pub struct DetectArgs {
    /// Input image (PNG, PGM/PPM or JPEG; `-`: read it from standard input).
    pub image: PathBuf,
    /// Detection options.
    #[command(flatten)]
    pub detect: DetectOptions,
    /// Write the keypoints and descriptors as JSON to FILE (`-`: stdout).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write the keypoints (N x 6 float32), descriptors (N x 64 float32) and parameters as a
    /// NumPy archive (`numpy.load`) to FILE (layout: docs/JSON.md).
    #[arg(long, value_name = "FILE.npz")]
    pub npz: Option<PathBuf>,
    /// Write the image with the keypoints drawn on it to FILE (.png, .jpg/.jpeg or .ppm; the
    /// extension picks the format).
    #[arg(long, value_name = "FILE.png")]
    pub draw: Option<PathBuf>,
}

/// `surfcl match`.
#[derive(Debug, Clone, Args)]
pub struct MatchArgs {
    /// First (query) image (`-`: standard input).
    pub image1: PathBuf,
    /// Second (train) image (`-`: standard input, when the first is a file).
    pub image2: PathBuf,
    /// Detection options (the same for both images).
    #[command(flatten)]
    pub detect: DetectOptions,
    /// Matching options.
    #[command(flatten)]
    pub matching: MatchOptions,
    /// Ground-truth homography from image 1 to image 2 (3x3, Oxford format): counts the
    /// correct matches (mapped within 3 px).
    #[arg(long, value_name = "FILE")]
    pub homography: Option<PathBuf>,
    /// Write keypoints and matches as JSON to FILE (`-`: stdout).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write the keypoints (N x 6 float32), descriptors (N x 64, float32 or int8 with
    /// `--descriptor q7`), matches (M x 3 float32) and parameters as a NumPy archive
    /// (`numpy.load`) to FILE (layout: docs/JSON.md).
    #[arg(long, value_name = "FILE.npz")]
    pub npz: Option<PathBuf>,
    /// Write both images side by side with the match lines to FILE (.png, .jpg/.jpeg or .ppm).
    /// At most 200 matches are drawn (evenly chosen, the same every run): see `--draw-all`.
    #[arg(long, value_name = "FILE.png")]
    pub draw: Option<PathBuf>,
    /// With `--draw`: draw every match instead of at most 200.
    #[arg(long, requires = "draw")]
    pub draw_all: bool,
}

/// A `--draw FILE` output, checked before the work: the picture format follows the extension.
pub(crate) struct DrawOutput {
    file: OutputFile,
    format: image::ImageFormat,
}

impl DrawOutput {
    /// Checks the extension and the path, and reserves the file ([`OutputFile::prepare`]).
    pub(crate) fn prepare(path: Option<&Path>) -> Result<Option<Self>, Error> {
        path.map(|p| {
            let format = draw::picture_format(p)?;
            Ok(Self {
                file: OutputFile::prepare(p)?,
                format,
            })
        })
        .transpose()
    }

    /// Encodes and writes the picture (not yet under its name: see [`WrittenFile::persist`]).
    pub(crate) fn write(self, picture: &image::RgbImage) -> Result<WrittenFile, Error> {
        let bytes = draw::encode(picture, self.format, self.file.path())?;
        self.file.write(&bytes)
    }
}

/// Total of the stage timings, milliseconds.
pub(crate) fn total_ms(features: &Features) -> f64 {
    features.timings.iter().map(|t| t.ms).sum()
}

/// Prints the per-stage table of `--profile`.
pub(crate) fn print_profile(human: &Human, label: &str, features: &Features) -> Result<(), Error> {
    human.line(&format!("{label}: stage timings"))?;
    for t in &features.timings {
        human.line(&format!("  {:<24} {:>10.3} ms", t.name, t.ms))?;
    }
    human.line(&format!(
        "  {:<24} {:>10.3} ms",
        "total",
        total_ms(features)
    ))
}

/// `surfcl devices`.
pub(crate) fn devices() -> Result<ExitCode, Error> {
    match surfcl_gpu::opencl::list_devices() {
        Ok(list) if list.is_empty() => {
            stdout_line("no OpenCL device found (the CPU backend, --backend cpu, always works)")?;
        }
        Ok(list) => {
            stdout_line(&format!(
                "{:>5}  {:<12} {:<30} platform",
                "index", "type", "device"
            ))?;
            for d in &list {
                stdout_line(&format!(
                    "{:>5}  {:<12} {:<30} {}",
                    d.index, d.kind, d.name, d.platform
                ))?;
            }
        }
        Err(e) => {
            // Not an error of the tool: the machine has no OpenCL. Say so and how to fix it.
            stdout_line(&format!("no OpenCL device: {e}"))?;
            stdout_line("the CPU backend (--backend cpu) always works")?;
        }
    }
    let auto = surfcl_gpu::explain_auto();
    let takes = match &auto.device {
        Some(d) => format!("OpenCL device {}", d.index),
        None => "the CPU backend".to_string(),
    };
    stdout_line(&format!("--backend auto takes {takes}: {}", auto.reason))?;
    Ok(ExitCode::SUCCESS)
}

fn file_name(path: &Path) -> String {
    path.display().to_string()
}

/// `surfcl detect`.
pub(crate) fn detect(args: &DetectArgs) -> Result<ExitCode, Error> {
    let params = args.detect.params(DescriptorKind::F32)?;
    // Outputs are checked (and reserved) before any work.
    let json = JsonOutput::prepare(args.json.as_deref())?;
    let picture = DrawOutput::prepare(args.draw.as_deref())?;
    let npz_out = args.npz.as_deref().map(OutputFile::prepare).transpose()?;
    let human = Human::new(JsonOutput::is_stdout(json.as_ref()));
    let gray = load_gray_or_stdin(&args.image)?;
    // One frame: the cost of profiling does not matter, and the JSON reports the stages.
    surfcl_gpu::opencl::set_profiling(true);
    let mut backend = open_backend(args.detect.backend_choice(), args.detect.device.as_deref())?;
    let features = backend.detect(&gray.view()?, &params)?;
    human.line(&format!(
        "{}: {}x{}, {} keypoints ({} dropped), {} on {} ({}), {:.1} ms",
        file_name(&args.image),
        features.width,
        features.height,
        features.keypoints.len(),
        features.dropped,
        params.detector.name(),
        backend.name(),
        backend.device(),
        total_ms(&features)
    ))?;
    if args.detect.profile {
        print_profile(&human, &file_name(&args.image), &features)?;
    }
    let mut written = Vec::new();
    if let Some(out) = picture {
        written.push(out.write(&draw::keypoint_picture(&gray, &features.keypoints))?);
    }
    if let Some(out) = npz_out {
        let mut archive = npz::with_params(out.path(), &ParamsJson::new(&params, None))?;
        archive.keypoints("keypoints", &features.keypoints)?;
        archive.descriptors("descriptors", &features.descriptors)?;
        written.push(out.write(&archive.finish()?)?);
    }
    if let Some(out) = json {
        let report = DetectReport::new(&features, &params, backend.name(), &backend.device());
        written.extend(out.write(&report, false)?);
    }
    persist_all(written)?;
    Ok(ExitCode::SUCCESS)
}

/// `surfcl match`.
pub(crate) fn match_images(args: &MatchArgs) -> Result<ExitCode, Error> {
    let descriptor = args.matching.descriptor_kind();
    let params = args.detect.params(descriptor)?;
    let config = args.matching.config()?;
    if args.image1.as_os_str() == STDIN_ARG && args.image2.as_os_str() == STDIN_ARG {
        return Err(Error::InvalidArgument(
            "only one of the two images can come from standard input (-)".into(),
        ));
    }
    let json = JsonOutput::prepare(args.json.as_deref())?;
    let picture = DrawOutput::prepare(args.draw.as_deref())?;
    let npz_out = args.npz.as_deref().map(OutputFile::prepare).transpose()?;
    let human = Human::new(JsonOutput::is_stdout(json.as_ref()));
    // Read every input before the (possibly slow) work, so that a bad file fails fast.
    let gray1 = load_gray_or_stdin(&args.image1)?;
    let gray2 = load_gray_or_stdin(&args.image2)?;
    let homography = args
        .homography
        .as_deref()
        .map(load_homography)
        .transpose()?;
    surfcl_gpu::opencl::set_profiling(true);
    let mut backend = open_backend(args.detect.backend_choice(), args.detect.device.as_deref())?;
    let f1 = backend.detect(&gray1.view()?, &params)?;
    let f2 = backend.detect(&gray2.view()?, &params)?;
    let start = std::time::Instant::now();
    let matches = backend.match_features(&f1, &f2, &config, descriptor)?;
    let match_ms = start.elapsed().as_secs_f64() * 1e3;
    let flags = homography
        .as_ref()
        .map(|h| correct_matches(h, &f1.keypoints, &f2.keypoints, &matches).collect::<Vec<_>>());
    let correct = flags.as_ref().map(|f| f.iter().filter(|&&c| c).count());
    human.line(&format!(
        "{} keypoints in {}, {} in {}; {} matches ({} descriptors, {:.1} ms) on {} ({})",
        f1.keypoints.len(),
        file_name(&args.image1),
        f2.keypoints.len(),
        file_name(&args.image2),
        matches.len(),
        descriptor.name(),
        match_ms,
        backend.name(),
        backend.device()
    ))?;
    if let Some(c) = correct {
        human.line(&format!(
            "correct: {c} / {} (precision {:.3})",
            matches.len(),
            ratio(c, matches.len())
        ))?;
    }
    if args.detect.profile {
        print_profile(&human, &file_name(&args.image1), &f1)?;
        print_profile(&human, &file_name(&args.image2), &f2)?;
        human.line(&format!("  {:<24} {:>10.3} ms", "match", match_ms))?;
    }
    let mut written = Vec::new();
    if let Some(out) = picture {
        let lines: Vec<MatchLine> = matches
            .iter()
            .enumerate()
            .filter_map(|(i, m)| {
                let a = f1.keypoints.get(m.query as usize)?;
                let b = f2.keypoints.get(m.train as usize)?;
                Some(MatchLine {
                    from: (a.x, a.y),
                    to: (b.x, b.y),
                    correct: flags.as_ref().and_then(|f| f.get(i).copied()),
                    distance: m.distance,
                })
            })
            .collect();
        let limit = if args.draw_all {
            usize::MAX
        } else {
            draw::DEFAULT_MATCH_LINES
        };
        written.push(out.write(&draw::match_picture(&gray1, &gray2, &lines, limit))?);
    }
    if let Some(out) = npz_out {
        let mut archive = npz::with_params(
            out.path(),
            &ParamsJson::new(&params, Some((&config, descriptor))),
        )?;
        archive.keypoints("keypoints1", &f1.keypoints)?;
        archive.keypoints("keypoints2", &f2.keypoints)?;
        if descriptor == DescriptorKind::Q7 {
            let q7 = |f: &Features| f.descriptors.iter().map(to_q7).collect::<Vec<_>>();
            archive.descriptors_q7("descriptors1", &q7(&f1))?;
            archive.descriptors_q7("descriptors2", &q7(&f2))?;
        } else {
            archive.descriptors("descriptors1", &f1.descriptors)?;
            archive.descriptors("descriptors2", &f2.descriptors)?;
        }
        archive.matches("matches", &matches)?;
        written.push(out.write(&archive.finish()?)?);
    }
    if let Some(out) = json {
        let report = MatchReport {
            format_version: FORMAT_VERSION,
            detector: params.detector.name().into(),
            backend: backend.name().into(),
            device: backend.device(),
            descriptor: descriptor.name().into(),
            params: ParamsJson::new(&params, Some((&config, descriptor))),
            keypoints1: f1.keypoints.iter().map(KeypointJson::from).collect(),
            keypoints2: f2.keypoints.iter().map(KeypointJson::from).collect(),
            matches: matches_json(&matches),
            correct,
            correct_ratio: correct.map(|c| ratio(c, matches.len())),
        };
        written.extend(out.write(&report, false)?);
    }
    persist_all(written)?;
    Ok(ExitCode::SUCCESS)
}
