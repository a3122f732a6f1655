//! Q7 quantisation of descriptors, for the integer matcher.

use crate::keypoint::{DESCRIPTOR_LEN, Descriptor, DescriptorQ7};
use crate::math;

/// Quantises a descriptor to Q7: `clamp(round(127 f), -127, 127)` (round half away from zero;
/// NaN gives 0).
pub fn to_q7(d: &Descriptor) -> DescriptorQ7 {
    // Rounded as a vector (`round_to_i32_each`, the same half-away-from-zero rounding as
    // `roundf`, NaN to 0, saturating) and clamped as integers, so that the loop vectorises
    // instead of calling libm once per value.
    let mut scaled = [0f32; DESCRIPTOR_LEN];
    for (s, &f) in scaled.iter_mut().zip(d.iter()) {
        *s = 127.0 * f;
    }
    let mut rounded = [0i32; DESCRIPTOR_LEN];
    math::round_to_i32_each(&scaled, &mut rounded);
    let mut q = [0i8; DESCRIPTOR_LEN];
    for (q, &r) in q.iter_mut().zip(rounded.iter()) {
        // The clamp keeps -128 out.
        *q = r.clamp(-127, 127) as i8;
    }
    q
}
