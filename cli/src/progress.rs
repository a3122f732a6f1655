//! The progress bar of the long commands (`stream`, `eval`): on standard error, and only when
//! standard error is a terminal, so that logs, pipes and tests see none of it.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

/// A bar of `len` steps labelled `prefix`, hidden unless standard error is a terminal.
pub fn bar(prefix: &'static str, len: u64) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len);
    if let Ok(style) = ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} {msg}") {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_prefix(prefix);
    bar
}
