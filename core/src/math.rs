//! The one math shim of the crate: every floating-point function goes through here, so that the
//! crate stays `no_std` (libm) and a later switch (for example to `core` intrinsics) is one edit.

#![allow(dead_code)]

#[inline]
pub(crate) fn sqrtf(x: f32) -> f32 {
    libm::sqrtf(x)
}
#[inline]
pub(crate) fn expf(x: f32) -> f32 {
    libm::expf(x)
}
#[inline]
pub(crate) fn sinf(x: f32) -> f32 {
    libm::sinf(x)
}
#[inline]
pub(crate) fn cosf(x: f32) -> f32 {
    libm::cosf(x)
}
#[inline]
pub(crate) fn atan2f(y: f32, x: f32) -> f32 {
    libm::atan2f(y, x)
}
#[inline]
pub(crate) fn fabsf(x: f32) -> f32 {
    libm::fabsf(x)
}
#[inline]
pub(crate) fn floorf(x: f32) -> f32 {
    libm::floorf(x)
}
/// Round half away from zero, as C's `roundf` (OpenSURF's `fRound`); the OpenCL kernels use `round`.
#[inline]
pub(crate) fn roundf(x: f32) -> f32 {
    libm::roundf(x)
}
#[inline]
pub(crate) fn logf(x: f32) -> f32 {
    libm::logf(x)
}
#[inline]
pub(crate) fn powf(x: f32, y: f32) -> f32 {
    libm::powf(x, y)
}
#[inline]
pub(crate) fn sqrt(x: f64) -> f64 {
    libm::sqrt(x)
}
#[inline]
pub(crate) fn exp(x: f64) -> f64 {
    libm::exp(x)
}
#[inline]
pub(crate) fn fabs(x: f64) -> f64 {
    libm::fabs(x)
}
#[inline]
pub(crate) fn exp2(x: f64) -> f64 {
    libm::exp2(x)
}
/// Rounds half away from zero (as [`roundf`]) straight to `i32`, without a libm call: the
/// descriptor rounds two sample coordinates per sample. Saturates outside the `i32` range; NaN
/// gives 0.
#[inline]
pub(crate) fn round_to_i32(x: f32) -> i32 {
    // `as` truncates toward zero; `x - trunc(x)` is exact in f32, so comparing the fraction with
    // one half decides exactly like `roundf`. Beyond 2^23 every f32 is an integer (fraction 0).
    let t = x as i32;
    let frac = x - t as f32;
    if frac >= 0.5 {
        t.saturating_add(1)
    } else if frac <= -0.5 {
        t.saturating_sub(1)
    } else {
        t
    }
}
