//! The one error type of `surfcl-gpu`: wraps the core's small `Copy` errors, file and decoding
//! errors (always with the path, so the user knows which file is wrong), OpenCL errors and bad
//! arguments. The CLI prints it as `error: <message>` and exits with status 1.

use std::path::PathBuf;

/// Everything that can go wrong in the library side of `surfcl`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading or writing a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A file exists but its content cannot be used: an image we cannot decode (unknown format,
    /// truncated, corrupt), a file larger than accepted, a homography file that is not text.
    /// `message` says which (image errors start with "cannot decode image").
    #[error("{}: {message}", path.display())]
    Decode {
        /// The file.
        path: PathBuf,
        /// What the decoder said.
        message: String,
    },
    /// Encoding or saving an output image failed.
    #[error("{}: cannot write image: {message}", path.display())]
    Encode {
        /// The file.
        path: PathBuf,
        /// What the encoder said.
        message: String,
    },
    /// A homography file could not be parsed.
    #[error("{}: invalid homography: {source}", path.display())]
    HomographyFile {
        /// The file.
        path: PathBuf,
        /// The parser's error.
        #[source]
        source: surfcl_core::homography::HomographyError,
    },
    /// A homography computation failed (not a parse error).
    #[error("homography: {0}")]
    Homography(#[from] surfcl_core::homography::HomographyError),
    /// An image (or buffer) was rejected by the core's size checks.
    #[error("{0}")]
    Image(#[from] surfcl_core::ImageError),
    /// A SURF configuration or detection error.
    #[error("SURF: {0}")]
    Surf(#[from] surfcl_core::surf::SurfError),
    /// A descriptor computation error.
    #[error("descriptor: {0}")]
    Describe(#[from] surfcl_core::describe::DescribeError),
    /// A map of Haar responses (the CPU backend's description) could not be built.
    #[error("descriptor Haar map: {0}")]
    HaarMap(#[from] surfcl_core::haar_map::HaarMapError),
    /// A Harris configuration or detection error.
    #[error("Harris: {0}")]
    Harris(#[from] surfcl_core::harris::HarrisError),
    /// A matcher configuration or matching error.
    #[error("matcher: {0}")]
    Match(#[from] surfcl_core::matcher::MatchError),
    /// An OpenCL error.
    #[error("OpenCL: {0}")]
    OpenCl(#[from] crate::opencl::error::OpenClError),
    /// A command-line argument (or a combination of them) is invalid.
    #[error("{0}")]
    InvalidArgument(String),
    /// The backend's input area was used out of order ([`InputAreaError`]).
    #[error("input area: {0}")]
    InputArea(#[from] InputAreaError),
    /// A bug: an invariant of this crate did not hold (reported instead of panicking).
    #[error("internal error: {0}")]
    Internal(String),
    /// Serialising a report failed.
    #[error("JSON: {0}")]
    Json(#[from] serde_json::Error),
}

/// Why [`Backend::detect_input_into`](crate::backend::Backend::detect_input_into) refused to
/// detect: it only detects the one frame the last
/// [`Backend::input_area`](crate::backend::Backend::input_area) call handed the area out for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum InputAreaError {
    /// The backend has no input area (`input_area` returns `None`): detect from the caller's
    /// memory with `detect_into` instead.
    #[error("this backend has no input area; detect from your own memory with detect_into")]
    Unsupported,
    /// `input_area` was not called since the last detection (each frame written there is
    /// detected once; a second detection would see whatever the area holds), or a detection
    /// from the caller's memory came in between and may have replaced the area.
    #[error("no frame written: call input_area and write the frame before each detect_input_into")]
    NotWritten,
    /// The frame size differs from the one the area was handed out for.
    #[error(
        "the area was handed out for a {written_width}x{written_height} frame, not {width}x{height}"
    )]
    SizeMismatch {
        /// Width given to `input_area`.
        written_width: usize,
        /// Height given to `input_area`.
        written_height: usize,
        /// Width given to `detect_input_into`.
        width: usize,
        /// Height given to `detect_input_into`.
        height: usize,
    },
    /// The detection parameters differ from the ones the area was handed out for in a way that
    /// needs another detector (whose area does not hold the frame).
    #[error("the area was handed out for other detector parameters")]
    ParamsChanged,
}

impl Error {
    /// An [`Error::Io`] for `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}

impl From<surfcl_core::config::ConfigError> for Error {
    /// A rejected front-end configuration: the detector's own error, or an invalid argument.
    fn from(e: surfcl_core::config::ConfigError) -> Self {
        use surfcl_core::config::ConfigError;
        match e {
            ConfigError::Surf(e) => Error::Surf(e),
            ConfigError::Harris(e) => Error::Harris(e),
            ConfigError::MaxKeypoints(_) => Error::InvalidArgument(e.to_string()),
        }
    }
}
