//! Every relative link in every Markdown file of the repository leads somewhere: the file or
//! folder exists, and a `#fragment` names a heading of the target file (GitHub's anchors). Links
//! with a scheme (`https:`, `mailto:`) are not followed. Code blocks and inline code are not
//! links.
//!
//! The walk skips build outputs and hidden folders (`target*`, `.git`, virtual environments).
//! In `third_party/` only the project's own notes on its patches (`PATCHES.md`) are read: the
//! vendored crates keep their upstream documents as published.
//!
//! Every raw log in `docs/bench-logs/` is linked from some document (BENCHMARKS or HISTORY):
//! a log that no page cites is a figure nobody can find.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The repository root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .unwrap()
}

/// The paths in `dir`, sorted (so that failures are reported in the same order every run).
fn sorted_entries(dir: &Path) -> Vec<PathBuf> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    entries
}

/// Every `*.md` below `dir`, skipping hidden folders, build outputs and environments; below
/// `third_party/` only the `PATCHES.md` notes.
fn markdown_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for path in sorted_entries(dir) {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            let skip = name.starts_with('.')
                || name == "target"
                || name.starts_with("target-")
                || name == "node_modules"
                || name.contains("venv")
                || name == "__pycache__";
            if name == "third_party" {
                patch_notes(&path, out);
            } else if !skip {
                markdown_files(&path, out);
            }
        } else if name.ends_with(".md") {
            out.push(path);
        }
    }
}

/// Every `PATCHES.md` below `dir`: the project's notes on the vendored crates it patches.
fn patch_notes(dir: &Path, out: &mut Vec<PathBuf>) {
    for path in sorted_entries(dir) {
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n != "target") {
                patch_notes(&path, out);
            }
        } else if path.file_name().is_some_and(|n| n == "PATCHES.md") {
            out.push(path);
        }
    }
}

/// The lines of `text` outside fenced code blocks, with inline code spans removed.
fn prose_lines(text: &str) -> Vec<String> {
    let mut in_fence = false;
    let mut lines = Vec::new();
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        // Drop `code` spans (their content is not markdown), keep the rest.
        let mut kept = String::new();
        let mut in_code = false;
        for c in line.chars() {
            if c == '`' {
                in_code = !in_code;
            } else if !in_code {
                kept.push(c);
            }
        }
        lines.push(kept);
    }
    lines
}

/// The link targets of a Markdown text: inline `[text](target "title")` and reference
/// definitions `[label]: target`.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in prose_lines(text) {
        let mut rest = line.as_str();
        while let Some(i) = rest.find("](") {
            let after = &rest[i + 2..];
            let mut depth = 0usize;
            let end = after.char_indices().find(|&(_, c)| match c {
                '(' => {
                    depth += 1;
                    false
                }
                ')' if depth == 0 => true,
                ')' => {
                    depth -= 1;
                    false
                }
                _ => false,
            });
            let Some((end, _)) = end else { break };
            let target = after[..end].trim();
            // Drop an optional title and angle brackets.
            let target = target.split(" \"").next().unwrap_or("").trim();
            let target = target.trim_start_matches('<').trim_end_matches('>');
            out.push(target.to_string());
            rest = &after[end..];
        }
        let t = line.trim_start();
        if t.starts_with('[')
            && let Some(i) = t.find("]:")
        {
            let target = t[i + 2..].split_whitespace().next().unwrap_or("");
            out.push(target.to_string());
        }
    }
    out
}

/// GitHub's anchor of a heading: lower case, markdown links reduced to their text, characters
/// other than letters, digits, spaces, `-` and `_` removed, spaces turned into `-`.
fn slug(heading: &str) -> String {
    let mut text = String::new();
    let mut rest = heading;
    // [text](url) -> text
    while let Some(open) = rest.find('[') {
        let Some(close) = rest[open..].find("](").map(|c| open + c) else {
            break;
        };
        let Some(end) = rest[close..].find(')').map(|e| close + e) else {
            break;
        };
        text.push_str(&rest[..open]);
        text.push_str(&rest[open + 1..close]);
        rest = &rest[end + 1..];
    }
    text.push_str(rest);
    text.chars()
        .filter_map(|c| {
            if c.is_alphanumeric() || c == '-' || c == '_' {
                Some(c.to_lowercase().collect::<String>())
            } else if c == ' ' {
                Some("-".to_string())
            } else {
                None
            }
        })
        .collect()
}

/// The anchors of a Markdown text's headings (`#` lines outside code blocks), with GitHub's
/// `-1`, `-2` suffixes for repeated headings.
fn anchors(text: &str) -> HashSet<String> {
    let mut seen = HashSet::new();
    let mut in_fence = false;
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with("```") || t.starts_with("~~~") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence || !t.starts_with('#') {
            continue;
        }
        let heading = t.trim_start_matches('#');
        if !heading.starts_with(' ') {
            continue;
        }
        let heading = heading.trim().trim_end_matches('#').trim().replace('`', "");
        let base = slug(&heading);
        let mut anchor = base.clone();
        let mut n = 0;
        while seen.contains(&anchor) {
            n += 1;
            anchor = format!("{base}-{n}");
        }
        seen.insert(anchor);
    }
    seen
}

/// The files a Markdown file's relative links lead to (fragments dropped; missing targets left
/// out: `broken_links` reports those).
fn linked_files(file: &Path) -> Vec<PathBuf> {
    let text = std::fs::read_to_string(file).unwrap();
    links(&text)
        .into_iter()
        .filter(|t| !t.is_empty() && !t.contains("://") && !t.starts_with("mailto:"))
        .filter_map(|t| {
            let path_part = t.split('#').next().unwrap_or("");
            if path_part.is_empty() {
                return None;
            }
            file.parent().unwrap().join(path_part).canonicalize().ok()
        })
        .collect()
}

/// Every file below `dir`, recursively.
fn files_below(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files_below(&path, out);
        } else {
            out.push(path);
        }
    }
}

/// The files of `root/docs/bench-logs` that no Markdown file below `root` links to, as paths
/// relative to `root`, sorted.
fn unlinked_bench_logs(root: &Path) -> Vec<String> {
    let mut documents = Vec::new();
    markdown_files(root, &mut documents);
    let linked: HashSet<PathBuf> = documents.iter().flat_map(|d| linked_files(d)).collect();
    let mut logs = Vec::new();
    files_below(&root.join("docs/bench-logs"), &mut logs);
    let mut unlinked: Vec<String> = logs
        .iter()
        .filter(|log| !linked.contains(&log.canonicalize().unwrap()))
        .map(|log| log.strip_prefix(root).unwrap().display().to_string())
        .collect();
    unlinked.sort();
    unlinked
}

/// The broken links of the Markdown file `file`, as `"file: target (why)"`.
fn broken_links(file: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(file).unwrap();
    let mut broken = Vec::new();
    for target in links(&text) {
        if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
            continue;
        }
        let (path_part, fragment) = match target.split_once('#') {
            Some((p, f)) => (p, Some(f)),
            None => (target.as_str(), None),
        };
        let resolved = if path_part.is_empty() {
            file.to_path_buf()
        } else {
            file.parent().unwrap().join(path_part)
        };
        if !resolved.exists() {
            broken.push(format!("{}: {target} (no such file)", file.display()));
            continue;
        }
        if let Some(fragment) = fragment
            && resolved.extension().is_some_and(|e| e == "md")
        {
            let heads = anchors(&std::fs::read_to_string(&resolved).unwrap());
            if !heads.contains(fragment) {
                broken.push(format!("{}: {target} (no such heading)", file.display()));
            }
        }
    }
    broken
}

#[test]
fn every_relative_link_in_the_docs_resolves() {
    let root = root();
    let mut files = Vec::new();
    markdown_files(&root, &mut files);
    let names: Vec<String> = files
        .iter()
        .map(|f| f.strip_prefix(&root).unwrap().display().to_string())
        .collect();
    // The walk found the documents (else the test would pass on nothing).
    for expected in ["README.md", "docs/ARCHITECTURE.md", "docs/JSON.md"] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} not found in {names:?}"
        );
    }
    let relative = files
        .iter()
        .flat_map(|f| links(&std::fs::read_to_string(f).unwrap()))
        .filter(|t| !t.contains("://"))
        .count();
    assert!(
        relative > 20,
        "only {relative} relative links found: is the parser broken?"
    );
    let broken: Vec<String> = files.iter().flat_map(|f| broken_links(f)).collect();
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn every_bench_log_is_linked_from_a_document() {
    let root = root();
    let mut logs = Vec::new();
    files_below(&root.join("docs/bench-logs"), &mut logs);
    // The walk found the logs (else the test would pass on nothing).
    assert!(
        logs.len() > 50,
        "only {} files in docs/bench-logs: is the walk broken?",
        logs.len()
    );
    let unlinked = unlinked_bench_logs(&root);
    assert!(
        unlinked.is_empty(),
        "bench logs that no document links (link each from docs/BENCHMARKS.md or docs/HISTORY.md):\n{}",
        unlinked.join("\n")
    );
}

#[test]
fn the_log_check_finds_an_unlinked_log() {
    let dir = std::env::temp_dir().join(format!("surfcl-bench-logs-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("docs/bench-logs/gpu")).unwrap();
    std::fs::write(dir.join("docs/bench-logs/gpu/cited.txt"), "log\n").unwrap();
    std::fs::write(
        dir.join("docs/bench-logs/gpu/cited-with-anchor.txt"),
        "log\n",
    )
    .unwrap();
    std::fs::write(dir.join("docs/bench-logs/gpu/forgotten.txt"), "log\n").unwrap();
    std::fs::write(dir.join("docs/bench-logs/only-in-code.txt"), "log\n").unwrap();
    std::fs::write(
        dir.join("docs/BENCHMARKS.md"),
        "# Benchmarks\n[log](bench-logs/gpu/cited.txt), [log](bench-logs/gpu/cited-with-anchor.txt#L2)\n\
         `bench-logs/only-in-code.txt` is not a link\n",
    )
    .unwrap();
    let unlinked = unlinked_bench_logs(&dir);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(
        unlinked,
        vec![
            "docs/bench-logs/gpu/forgotten.txt".to_string(),
            "docs/bench-logs/only-in-code.txt".to_string()
        ]
    );
}

#[test]
fn the_checker_finds_broken_files_and_anchors() {
    let dir = std::env::temp_dir().join(format!("surfcl-doc-links-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(
        dir.join("sub/other.md"),
        "# Other page\n\n## Orientation (skipped when upright: orientation = 0)\n## A `code` heading\n## Twice\n## Twice\n",
    )
    .unwrap();
    let doc = dir.join("doc.md");
    std::fs::write(
        &doc,
        "# Title\n\
         [ok](sub/other.md) [ok](sub/other.md#other-page) [ok](#title)\n\
         [ok](sub/other.md#orientation-skipped-when-upright-orientation--0)\n\
         [ok](sub/other.md#a-code-heading) [ok](sub/other.md#twice-1) [web](https://example.org/x)\n\
         [gone](missing.md) [bad anchor](sub/other.md#nothing) [bad local](#nope)\n\
         [ref]: ../definitely-missing-surfcl.md\n\
         `[not a link](nowhere.md)`\n\
         ```\n[also not](nowhere.md)\n```\n",
    )
    .unwrap();
    let broken = broken_links(&doc);
    std::fs::remove_dir_all(&dir).unwrap();
    let targets: Vec<&str> = broken
        .iter()
        .map(|b| b.split(": ").nth(1).unwrap().split(' ').next().unwrap())
        .collect();
    assert_eq!(
        targets,
        vec![
            "missing.md",
            "sub/other.md#nothing",
            "#nope",
            "../definitely-missing-surfcl.md"
        ],
        "{broken:?}"
    );
}
