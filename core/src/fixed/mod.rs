//! Fixed-point arithmetic for parts without a floating-point unit (Cortex-M0/M0+/M3, RV32IMC).
//!
//! ## Why
//! Without an FPU every `f32` operation of the SURF path is a library call of tens of cycles.
//! The fixed-point path ([`surf::FixedPoint`](crate::surf::FixedPoint) for detection,
//! [`describe_q7`] for orientation and Q7 descriptors) computes everything from the exact integer
//! box sums with integer operations only; the results go into the usual [`Keypoint`] (its `f32`
//! fields are assembled from their bits, [`f32_from_fixed`], without any float arithmetic) so the
//! rest of the crate (ranking, matching) is shared.
//!
//! ## Formats
//! - Hessian responses: `i32` with [`RESPONSE_FRAC`] = 29 fractional bits (OpenSURF units; every
//!   response of a box filter is below 0.5 in magnitude, so there are 2 bits of headroom).
//! - Positions, scales and angles (radians): `i32`/`i64` with [`POS_FRAC`] = 16 fractional bits.
//! - Sines and cosines: [`TRIG_FRAC`] = 30 fractional bits.
//!
//! The tables of this module (CORDIC angles, Gaussian weights) are computed by the compiler in
//! `const` context (integer arithmetic, or `f64` evaluated at compile time), so no floating-point
//! code reaches the binary.

pub(crate) mod arith;
mod describe;

pub use arith::{
    PI_Q16, POS_FRAC, RESPONSE_FRAC, TRIG_FRAC, TWO_PI_Q16, atan2_q16, exp_neg_q16, f32_from_fixed,
    fixed_from_f32, isqrt_u128, round_fixed, sincos_q30,
};
pub use describe::{assign_orientation_fixed, describe_all_q7, describe_q7};

#[cfg(doc)]
use crate::keypoint::Keypoint;
