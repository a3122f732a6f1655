//! `surfcl eval`: detection and matching quality on an Oxford-layout sequence (Mikolajczyk et
//! al.): images `img1.*` .. `imgN.*` and ground-truth homographies `H1to2p` .. `H1toNp`. Each pair
//! 1-K is detected, matched and scored: a match is correct when the homography maps the first
//! point within 3 px of the second ([`surfcl_core::homography`]), the correct ratio (the table's
//! `precision` column, `correct_ratio` in the JSON) = correct / matches,
//! and repeatability is the core's detector repeatability under the homography: the share of
//! img1's keypoints that project inside imgK and have an imgK keypoint within the same 3 px.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use surfcl_core::homography::{CORRECT_TOLERANCE_PX, correct_matches, repeatability};

use super::args::{DetectOptions, MatchOptions};
use super::output::{Human, JsonOutput, persist_all};
use crate::io::{load_gray, load_homography};
use crate::report::{EvalPair, EvalReport, FORMAT_VERSION, ParamsJson, ratio};
use surfcl_core::config::Named;
use surfcl_gpu::Error;
use surfcl_gpu::backend::Features;
use surfcl_gpu::open_backend;

/// Image extensions looked for, in this order of preference.
const EXTENSIONS: [&str; 6] = ["pgm", "png", "ppm", "jpg", "jpeg", "pnm"];

/// `surfcl eval`.
#[derive(Debug, Clone, Args)]
pub struct EvalArgs {
    /// Folder in the Oxford layout: img1..imgN (PNG, PGM/PPM or JPEG) and H1to2p..H1toNp.
    pub dir: PathBuf,
    /// Detection options.
    #[command(flatten)]
    pub detect: DetectOptions,
    /// Matching options.
    #[command(flatten)]
    pub matching: MatchOptions,
    /// Write the table as JSON to FILE (`-`: stdout).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// The images and homographies of an Oxford-layout folder: `(images, homographies)` where
/// `images[0]` is img1 and `homographies[k]` maps img1 to `images[k + 1]`.
///
/// The sequence is img1, img2, ... up to the first missing image; every image after img1 needs
/// its `H1toKp`.
pub fn find_oxford_sequence(dir: &Path) -> Result<(Vec<PathBuf>, Vec<PathBuf>), Error> {
    if !dir.is_dir() {
        return Err(Error::io(
            dir,
            std::io::Error::new(std::io::ErrorKind::NotFound, "not a directory"),
        ));
    }
    let find_image = |k: usize| {
        EXTENSIONS
            .iter()
            .map(|ext| dir.join(format!("img{k}.{ext}")))
            .find(|p| p.is_file())
    };
    let mut images = Vec::new();
    let mut homographies = Vec::new();
    for k in 1.. {
        let Some(image) = find_image(k) else { break };
        if k > 1 {
            let h = dir.join(format!("H1to{k}p"));
            if !h.is_file() {
                return Err(Error::io(
                    &h,
                    std::io::Error::new(
                        std::io::ErrorKind::NotFound,
                        format!("homography for img{k} missing"),
                    ),
                ));
            }
            homographies.push(h);
        }
        images.push(image);
    }
    if images.len() < 2 {
        return Err(Error::InvalidArgument(format!(
            "{}: expected img1.* and img2.* (Oxford layout, extensions {})",
            dir.display(),
            EXTENSIONS.join("/")
        )));
    }
    Ok((images, homographies))
}

/// `surfcl eval`.
pub(crate) fn eval(args: &EvalArgs) -> Result<ExitCode, Error> {
    let descriptor = args.matching.descriptor_kind();
    let params = args.detect.params(descriptor)?;
    let config = args.matching.config()?;
    let json = JsonOutput::prepare(args.json.as_deref())?;
    let human = Human::new(JsonOutput::is_stdout(json.as_ref()));
    let (images, h_paths) = find_oxford_sequence(&args.dir)?;
    let homographies = h_paths
        .iter()
        .map(|p| load_homography(p))
        .collect::<Result<Vec<_>, _>>()?;
    let mut backend = open_backend(args.detect.backend_choice(), args.detect.device.as_deref())?;

    let bar = crate::progress::bar("eval", images.len() as u64 + homographies.len() as u64);
    let mut detect_one = |path: &Path| -> Result<Features, Error> {
        bar.set_message(format!("detect {}", path.display()));
        let gray = load_gray(path)?;
        let features = backend.detect(&gray.view()?, &params)?;
        bar.inc(1);
        Ok(features)
    };
    let first = detect_one(&images[0])?;
    let others = images[1..]
        .iter()
        .map(|p| detect_one(p))
        .collect::<Result<Vec<_>, _>>()?;

    let mut pairs = Vec::new();
    for (k, (second, h)) in others.iter().zip(&homographies).enumerate() {
        bar.set_message(format!("match 1-{}", k + 2));
        let matches = backend.match_features(&first, second, &config, descriptor)?;
        let correct = correct_matches(h, &first.keypoints, &second.keypoints, &matches)
            .filter(|&c| c)
            .count();
        let mut scratch = vec![0u32; second.keypoints.len()];
        let repeated = repeatability(
            h,
            &first.keypoints,
            &second.keypoints,
            second.width,
            second.height,
            CORRECT_TOLERANCE_PX,
            &mut scratch,
        )?;
        pairs.push(EvalPair {
            pair: format!("1-{}", k + 2),
            keypoints1: first.keypoints.len(),
            keypoints2: second.keypoints.len(),
            matches: matches.len(),
            correct,
            correct_ratio: ratio(correct, matches.len()),
            repeatability: f64::from(repeated.ratio),
        });
        bar.inc(1);
    }
    bar.finish_and_clear();

    let (threshold, threshold_relative) = params.effective_threshold();
    human.line(&format!(
        "{}: {} on {} ({}), threshold {}{}",
        args.dir.display(),
        params.detector.name(),
        backend.name(),
        backend.device(),
        threshold,
        if threshold_relative {
            " of the largest response"
        } else {
            ""
        }
    ))?;
    human.line(&format!(
        "{:<5} {:>7} {:>7} {:>8} {:>8} {:>9} {:>13}",
        "pair", "kp1", "kp2", "matches", "correct", "precision", "repeatability"
    ))?;
    for p in &pairs {
        human.line(&format!(
            "{:<5} {:>7} {:>7} {:>8} {:>8} {:>9.3} {:>13.3}",
            p.pair,
            p.keypoints1,
            p.keypoints2,
            p.matches,
            p.correct,
            p.correct_ratio,
            p.repeatability
        ))?;
    }
    if let Some(out) = json {
        let report = EvalReport {
            format_version: FORMAT_VERSION,
            dir: args.dir.display().to_string(),
            detector: params.detector.name().into(),
            backend: backend.name().into(),
            device: backend.device(),
            threshold,
            threshold_relative,
            params: ParamsJson::new(&params, Some((&config, descriptor))),
            pairs,
        };
        persist_all(out.write(&report, false)?)?;
    }
    Ok(ExitCode::SUCCESS)
}
