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
//! The `fixed` crate's types, so that each value carries its format:
//! - Hessian responses: [`Response`], Q29 in 32 bits (OpenSURF units; every response of a box
//!   filter is below 0.5 in magnitude, so there are 2 bits of headroom).
//! - Positions, scales and angles (radians): [`Position`], Q16 in 64 bits.
//! - Sines and cosines: [`Unit`], Q30 in 64 bits.
//! - Gaussian weights: [`Weight`], unsigned Q16.
//!
//! The hot loops multiply a value by the bits of a weight or a sine (`fixed`'s multiplication
//! by an integer, then a shift) rather than with `fixed`'s full multiplication of two 64-bit
//! values, which takes a 128-bit product: on a Cortex-M0 that would be a library call per
//! sample. The `_q16`/`_q30` functions give the bits of the typed ones, for callers that keep
//! integers.
//!
//! The tables of this module (CORDIC angles, Gaussian weights) are computed by the compiler in
//! `const` context (integer arithmetic, or `f64` evaluated at compile time), so no floating-point
//! code reaches the binary.

pub(crate) mod arith;
mod describe;

pub use arith::{
    PI, PI_Q16, POS_FRAC, Position, RESPONSE_FRAC, Response, TRIG_FRAC, TWO_PI, TWO_PI_Q16, Unit,
    Weight, atan2, atan2_q16, exp_neg, exp_neg_q16, f32_from_fixed, fixed_from_f32, isqrt_u128,
    position_from_f32, position_to_f32, round_fixed, round_position, sincos, sincos_q30,
};
pub use describe::{assign_orientation_fixed, describe_all_q7, describe_q7};

#[cfg(doc)]
use crate::keypoint::Keypoint;
