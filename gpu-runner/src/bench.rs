//! `surfcl bench` (being written).
