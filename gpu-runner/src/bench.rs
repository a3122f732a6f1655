//! `surfcl bench` (placeholder: being written by the OpenCL work).
