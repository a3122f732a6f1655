//! Where the results of a command go, and how they get there without half-written files.
//!
//! - Standard output: [`stdout_line`] and [`stdout_bytes`] turn a write error into an
//!   [`Error::Io`] for `<stdout>`. A closed pipe (`surfcl stream DIR | head -1`) is such an
//!   error; [`is_broken_pipe`] recognises it, and the command line then stops quietly with status
//!   0, as a tool killed by `SIGPIPE` would have stopped (Rust ignores `SIGPIPE`, so without this
//!   `println!` panics).
//! - Standard error: [`stderr_line`] ignores write errors (there is nowhere left to report them).
//! - Files (`--json FILE`, `--draw FILE`): [`OutputFile::prepare`] runs *before* the work. It
//!   checks the path (its folder exists, it is not a directory) and creates the temporary file
//!   next to it, which proves that the folder is writable, so that a bad output path fails in
//!   milliseconds instead of after the whole run. [`OutputFile::write`] fills the temporary file
//!   (any error names the target, and the temporary file is deleted), and
//!   [`WrittenFile::persist`] renames it over the target. Commands write every output first and
//!   rename them all at the end, so a run that fails leaves no output behind: no truncated JSON
//!   after a full disk, no picture of a run whose JSON could not be written.
//!   A target that exists and is not a regular file (`/dev/null`, a FIFO) is written directly:
//!   renaming over it would replace the device node.

use std::fs::{File, OpenOptions, Permissions};
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

use surfcl_gpu::Error;

/// The name standard output has in error messages.
pub const STDOUT: &str = "<stdout>";

/// Writes `bytes` to standard output and flushes; errors are [`Error::Io`] for [`STDOUT`].
pub fn stdout_bytes(bytes: &[u8]) -> Result<(), Error> {
    let mut out = std::io::stdout().lock();
    out.write_all(bytes)
        .and_then(|()| out.flush())
        .map_err(|e| Error::io(STDOUT, e))
}

/// Writes one line to standard output (see [`stdout_bytes`]).
pub fn stdout_line(text: &str) -> Result<(), Error> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{text}").map_err(|e| Error::io(STDOUT, e))
}

/// Writes one line to standard error, ignoring failures.
pub fn stderr_line(text: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{text}");
}

/// Whether `e` is a write to a closed standard output (the reader of the pipe went away).
pub fn is_broken_pipe(e: &Error) -> bool {
    matches!(e, Error::Io { path, source }
        if path.as_os_str() == STDOUT && source.kind() == std::io::ErrorKind::BrokenPipe)
}

/// Where human-readable output goes: stdout, unless stdout carries the JSON.
#[derive(Debug, Clone, Copy)]
pub struct Human {
    to_stderr: bool,
}

impl Human {
    /// Human lines go to stderr when `json_on_stdout`.
    pub fn new(json_on_stdout: bool) -> Self {
        Self {
            to_stderr: json_on_stdout,
        }
    }

    /// Writes one line (see [`stdout_line`] for the errors).
    pub fn line(&self, text: &str) -> Result<(), Error> {
        if self.to_stderr {
            stderr_line(text);
            Ok(())
        } else {
            stdout_line(text)
        }
    }
}

/// An output file checked and reserved before the work (module docs).
#[derive(Debug)]
pub struct OutputFile {
    path: PathBuf,
    kind: Target,
}

#[derive(Debug)]
enum Target {
    /// A regular file (new or replaced): a temporary file in the same folder, renamed at the end.
    Replace(NamedTempFile, PathBuf),
    /// An existing device or FIFO, written in place.
    Stream,
}

/// An [`OutputFile`] whose content is complete, waiting for [`WrittenFile::persist`].
#[derive(Debug)]
#[must_use = "a written file only appears under its name once persisted"]
pub struct WrittenFile {
    path: PathBuf,
    kind: Target,
}

fn invalid(path: &Path, message: String) -> Error {
    Error::io(
        path,
        std::io::Error::new(std::io::ErrorKind::InvalidInput, message),
    )
}

impl OutputFile {
    /// Checks `path` and creates the temporary file next to it (module docs).
    pub fn prepare(path: &Path) -> Result<Self, Error> {
        if path.as_os_str().is_empty() {
            return Err(Error::InvalidArgument("an output path is empty".into()));
        }
        // Follow a symbolic link to the file it names, so that the link stays a link.
        let (target, existing) = match std::fs::metadata(path) {
            Ok(meta) if meta.is_dir() => {
                return Err(invalid(path, "is a directory, not a file".into()));
            }
            Ok(meta) if !meta.is_file() => {
                return Ok(Self {
                    path: path.to_path_buf(),
                    kind: Target::Stream,
                });
            }
            Ok(_) => (
                std::fs::canonicalize(path).map_err(|e| Error::io(path, e))?,
                true,
            ),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => (path.to_path_buf(), false),
            Err(e) => return Err(Error::io(path, e)),
        };
        let folder = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        if !folder.is_dir() {
            return Err(invalid(
                path,
                format!("the folder {} does not exist", folder.display()),
            ));
        }
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let temp = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(".part")
            // The umask applies, as for any file the user creates.
            .permissions(Permissions::from_mode(0o666))
            .tempfile_in(&folder)
            .map_err(|e| {
                // tempfile appends ` at path "<temporary name>"` to the OS error: the user
                // needs the reason, not our temporary name.
                let text = e.to_string();
                let reason = text.split(" at path \"").next().unwrap_or(&text).to_owned();
                Error::io(
                    path,
                    std::io::Error::new(
                        e.kind(),
                        format!("cannot create a file in {}: {reason}", folder.display()),
                    ),
                )
            })?;
        if existing {
            // Replacing a file keeps its permissions.
            if let Ok(meta) = std::fs::metadata(&target) {
                let _ = temp.as_file().set_permissions(meta.permissions());
            }
        }
        Ok(Self {
            path: path.to_path_buf(),
            kind: Target::Replace(temp, target),
        })
    }

    /// The path given by the user.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes the whole content. On error the temporary file is deleted and the error names
    /// the target.
    pub fn write(self, bytes: &[u8]) -> Result<WrittenFile, Error> {
        let io = |e| Error::io(&self.path, e);
        match &self.kind {
            Target::Replace(temp, _) => {
                let mut file: &File = temp.as_file();
                file.write_all(bytes).map_err(io)?;
                // A full disk may only show when the data reach it.
                file.sync_all().map_err(io)?;
            }
            Target::Stream => {
                let mut file = OpenOptions::new()
                    .write(true)
                    .open(&self.path)
                    .map_err(io)?;
                file.write_all(bytes).map_err(io)?;
                file.flush().map_err(io)?;
            }
        }
        Ok(WrittenFile {
            path: self.path,
            kind: self.kind,
        })
    }
}

impl WrittenFile {
    /// Renames the temporary file over the target.
    pub fn persist(self) -> Result<(), Error> {
        match self.kind {
            Target::Replace(temp, target) => temp
                .persist(&target)
                .map(|_| ())
                .map_err(|e| Error::io(&self.path, e.error)),
            Target::Stream => Ok(()),
        }
    }
}

/// Persists every written file, in order (see [`WrittenFile::persist`]).
pub fn persist_all(files: impl IntoIterator<Item = WrittenFile>) -> Result<(), Error> {
    for f in files {
        f.persist()?;
    }
    Ok(())
}

/// Where a JSON report goes, prepared before the work: a file or standard output (`-`).
#[derive(Debug)]
pub enum JsonOutput {
    /// Standard output (the human summary then goes to stderr, so stdout stays valid JSON).
    Stdout,
    /// A file.
    File(OutputFile),
}

impl JsonOutput {
    /// Prepares `--json ARG` (`None` when the option is absent).
    pub fn prepare(arg: Option<&Path>) -> Result<Option<Self>, Error> {
        arg.map(|p| {
            if p.as_os_str() == "-" {
                Ok(JsonOutput::Stdout)
            } else {
                OutputFile::prepare(p).map(JsonOutput::File)
            }
        })
        .transpose()
    }

    /// Whether the JSON goes to standard output.
    pub fn is_stdout(json: Option<&Self>) -> bool {
        matches!(json, Some(JsonOutput::Stdout))
    }

    /// Serialises `value` (pretty when `pretty`) and writes it: to stdout at once, or into the
    /// temporary file, returned for [`WrittenFile::persist`].
    pub fn write<T: serde::Serialize>(
        self,
        value: &T,
        pretty: bool,
    ) -> Result<Option<WrittenFile>, Error> {
        let mut bytes = if pretty {
            serde_json::to_vec_pretty(value)?
        } else {
            serde_json::to_vec(value)?
        };
        bytes.push(b'\n');
        match self {
            JsonOutput::Stdout => stdout_bytes(&bytes).map(|()| None),
            JsonOutput::File(f) => f.write(&bytes).map(Some),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::FileTypeExt;

    #[test]
    fn a_file_appears_only_when_persisted_and_a_dropped_one_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.json");
        let file = OutputFile::prepare(&target).unwrap();
        let written = file.write(b"{}\n").unwrap();
        assert!(!target.exists(), "visible before persist");
        written.persist().unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"{}\n");

        // Replaced atomically; a write that is never persisted leaves the old content and no
        // temporary file.
        let file = OutputFile::prepare(&target).unwrap();
        drop(file.write(b"new").unwrap());
        assert_eq!(std::fs::read(&target).unwrap(), b"{}\n");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("out.json")]);
    }

    #[test]
    fn bad_paths_fail_at_prepare_and_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("no/such/folder/x.json");
        let e = OutputFile::prepare(&missing).unwrap_err().to_string();
        assert!(e.contains("x.json") && e.contains("does not exist"), "{e}");
        let e = OutputFile::prepare(dir.path()).unwrap_err().to_string();
        assert!(e.contains("is a directory"), "{e}");
        // A folder where nothing can be created: the reason, without the temporary name.
        let e = OutputFile::prepare(Path::new("/proc/x.json"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("/proc/x.json: cannot create a file in /proc"),
            "{e}"
        );
        assert!(!e.contains(".part"), "{e}");
        // A device is written in place, never replaced.
        let null = OutputFile::prepare(Path::new("/dev/null")).unwrap();
        null.write(b"x").unwrap().persist().unwrap();
        assert!(
            std::fs::metadata("/dev/null")
                .unwrap()
                .file_type()
                .is_char_device()
        );
    }
}
