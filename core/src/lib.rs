//! # surfcl-core
//!
//! The CPU reference of surfcl: SURF (Bay et al. 2006/2008, as in OpenSURF) and Harris interest
//! points, SURF-64 descriptors, brute-force 2-NN matching and homography-based evaluation, in
//! `no_std` Rust with no allocator.
//!
//! ## Layers
//! - [`image`]: a checked, borrowed 8-bit grayscale image and the size limits.
//! - [`integral`]: the exact `u32` integral image and clamped box sums.
//! - [`surf`]: the Fast-Hessian detector: box-filter responses in `f32` or in the 8-bit packed
//!   format, 3x3x3 non-maximum suppression and sub-pixel/scale interpolation.
//! - [`haar`]: the Haar wavelets of orientation and description, exact integer box differences.
//! - [`describe`]: orientation assignment and SURF-64 descriptors (upright or oriented), Q7.
//! - [`haar_map`]: the descriptor's Haar responses of one size at every pixel, for frames with
//!   many keypoints of that size (same descriptors, fewer scattered reads).
//! - [`harris`]: the Harris corner detector (Loundagin 2015).
//! - [`matcher`]: 2-NN matching with ratio, sign-of-Laplacian and mutual tests, f32 and Q7.
//! - [`homography`]: projecting points, correct-match tests and repeatability.
//! - [`banded`]: detection and description of a frame fed row by row, holding a band of the
//!   integral image (for microcontrollers: a QVGA frame in under 256 KB).
//! - [`config`]: the front-end configuration (detector choice, names, defaults, limits) that
//!   the command line and the ROS node both parse into.
//!
//! The caller owns every buffer; each operation documents (and has a function for) the size it
//! needs. The OpenCL kernels of `surfcl-gpu` reproduce this crate: exactly where the arithmetic is
//! integer (integral image, packed responses, keypoint sample positions), within stated
//! tolerances elsewhere.
#![cfg_attr(not(test), no_std)]
#![deny(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod math;

pub mod banded;
pub mod config;
pub mod describe;
pub mod fixed;
pub mod haar;
pub mod harris;
pub mod homography;
pub mod image;
pub mod integral;
pub mod keypoint;
pub mod matcher;
pub mod surf;

pub use describe::haar_map;
pub use image::{GrayImage, ImageError};
pub use integral::IntegralImage;
pub use keypoint::{
    DESCRIPTOR_LEN, Descriptor, DescriptorQ7, Keypoint, KeypointBuffer, KeypointSet, KeypointSink,
};
