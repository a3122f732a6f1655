//! Harris benchmark (being written).
fn main() {}
