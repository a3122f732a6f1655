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
