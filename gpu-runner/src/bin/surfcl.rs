//! The `surfcl` command-line tool.
fn main() {}
