//! # surfcl-cli
//!
//! The `surfcl` command-line tool over the `surfcl-gpu` runtime (OpenCL, or the CPU backend).
//!
//! ## Modules
//! - [`io`]: image and homography file loading with size checks before decoding.
//! - [`draw`]: annotated PNG output (keypoints, matches).
//! - [`report`]: the JSON reports of `detect`, `match` and `eval`.
//! - the commands (clap), `surfcl bench` included, and their outputs.
//!
//! ## Commands
//!
//! ```text
//! surfcl devices
//! surfcl detect IMAGE|- [detect options] [--json FILE|-] [--npz FILE] [--draw FILE.png|.jpg|.ppm]
//!               [--profile]
//! surfcl match IMAGE1|- IMAGE2|- [detect options] [match options] [--homography FILE]
//!              [--json FILE|-] [--npz FILE] [--draw FILE.png|.jpg|.ppm] [--draw-all]
//! surfcl eval DIR [detect/match options] [--json FILE|-]
//! surfcl bench [--sizes 640x480,1280x960,1920x1080] [--frames N] [--json FILE] [--stream]
//! surfcl stream DIR|FRAMES... [--max-size WxH] [detect/match options] [--json FILE|-]
//!               [--npz FILE]
//! ```
//!
//! The JSON reports and the NumPy archives (`--npz`) are described in `docs/JSON.md`. An image
//! argument `-` is read from standard input (one of the two images of `match`).
//!
//! Exit status: 0 on success, 1 on a runtime error (printed as `error: ...` on stderr), 2 on a
//! usage error (clap's message). With `--json -` the JSON is the only thing on stdout; the human
//! summary then goes to stderr. A closed standard output (`surfcl ... | head -1`) ends the
//! command quietly with status 0.
//!
//! Inputs must be regular files (a FIFO or a device is refused before it is opened). Output
//! paths (`--json FILE`, `--draw FILE`) are checked before the work, and the files are written
//! under a temporary name and renamed only when the whole run succeeded: a failed run leaves no
//! output behind (see `output`).

#![deny(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

mod args;
mod bench;
mod commands;
pub mod draw;
mod eval;
pub mod io;
pub mod npz;
pub(crate) mod output;
mod progress;
pub mod report;
mod stream;

use std::ffi::OsString;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub use args::{BenchArgs, DetectOptions, ImageSize, JsonTarget, MatchOptions};
pub use commands::{DetectArgs, MatchArgs};
pub use eval::{EvalArgs, find_oxford_sequence};
pub use stream::StreamArgs;

use surfcl_gpu::Error;

/// SURF and Harris interest points of image files, their SURF-64 descriptors and matches, on
/// OpenCL or the CPU.
#[derive(Debug, Parser)]
#[command(
    name = "surfcl",
    version,
    about = "Finds SURF or Harris interest points in images, describes them (SURF-64) and matches \
them between images, on an OpenCL device or the CPU",
    long_about = "Finds SURF or Harris interest points in images, describes them (SURF-64) and \
matches them between images, on an OpenCL device (GPU) or the CPU.\n\n\
Results go to the terminal, to JSON (--json), to NumPy archives (--npz, detect/match/stream) \
and to annotated pictures (--draw); docs/JSON.md describes the files. `surfcl detect -` reads \
the image from standard input."
)]
pub struct Cli {
    /// The subcommand.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// List the OpenCL devices.
    Devices,
    /// Detect and describe the interest points of one image.
    Detect(DetectArgs),
    /// Match the interest points of two images.
    Match(MatchArgs),
    /// Evaluate on an Oxford-layout sequence (img1..imgN, H1to2p..H1toNp).
    Eval(EvalArgs),
    /// Time the OpenCL pipeline against the CPU backend on the boat image at several sizes.
    ///
    /// The frames are the Oxford boat image ($SURFCL_BENCH_IMAGE, else
    /// data/oxford-boat/img1.pgm) resized to each of `--sizes`; a built-in synthetic frame
    /// stands in only when no such image is found, and the output then says so. Also timed: the
    /// matcher on random descriptors; and listed: the device memory per size.
    Bench(BenchArgs),
    /// Detect, describe and match a sequence of frames, each against the previous one (OpenCL,
    /// or the CPU with `--backend cpu`).
    Stream(StreamArgs),
}

/// Exit status for a runtime error.
pub const EXIT_ERROR: u8 = 1;
/// Exit status for a usage error (also clap's).
pub const EXIT_USAGE: u8 = 2;

/// Parses `args` (including the program name) and runs the command; returns the exit status.
pub fn main_with_args<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        // Help and version print to stdout and exit 0; real usage errors exit 2.
        Err(e) => e.exit(),
    };
    match run(cli) {
        Ok(code) => code,
        // The reader of our standard output is gone: nothing left to say, and nobody to say it to.
        Err(e) if output::is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            output::stderr_line(&format!("error: {}", error_chain(&e)));
            ExitCode::from(match e {
                Error::InvalidArgument(_) => EXIT_USAGE,
                _ => EXIT_ERROR,
            })
        }
    }
}

/// The message of an error followed by its sources, when they add something.
fn error_chain(e: &Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        let s_text = s.to_string();
        if !text.contains(&s_text) {
            text.push_str(": ");
            text.push_str(&s_text);
        }
        source = s.source();
    }
    text
}

/// Runs a parsed command.
pub fn run(cli: Cli) -> Result<ExitCode, Error> {
    // A misspelt fault plan would silently test nothing: refuse it up front.
    #[cfg(feature = "fault-injection")]
    surfcl_gpu::opencl::inject::plan_from_env().map_err(Error::InvalidArgument)?;
    match cli.command {
        Command::Devices => commands::devices(),
        Command::Detect(args) => commands::detect(&args),
        Command::Match(args) => commands::match_images(&args),
        Command::Eval(args) => eval::eval(&args),
        Command::Bench(args) => bench(&args),
        Command::Stream(args) => stream::stream(&args),
    }
}

/// `surfcl bench`: dispatched to [`bench::run`].
fn bench(args: &BenchArgs) -> Result<ExitCode, Error> {
    bench::run(
        args,
        args.detect.backend_choice(),
        args.detect.device.as_deref(),
    )?;
    Ok(ExitCode::SUCCESS)
}
