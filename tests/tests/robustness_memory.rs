//! Memory budget of the core pipeline, computed from the core's own size functions (the buffers
//! the caller must provide), printed as a table (`cargo test -p surfcl-tests --test
//! robustness_memory -- --nocapture`), and checked against what the CPU backend really holds.

use std::mem::size_of;

use surfcl_core::harris;
use surfcl_core::integral::integral_len;
use surfcl_core::surf::{self, Precision, SurfConfig};
use surfcl_core::{Descriptor, Keypoint};

/// Bytes of each buffer for a `w x h` frame and `capacity` keypoints.
struct Budget {
    integral: usize,
    surf_f32: usize,
    surf_packed: usize,
    harris: usize,
    keypoints: usize,
    descriptors: usize,
}

fn budget(w: usize, h: usize, capacity: usize) -> Budget {
    let f32_config = SurfConfig::default();
    let packed = SurfConfig {
        precision: Precision::Packed8,
        ..f32_config
    };
    Budget {
        integral: integral_len(w, h).unwrap() * size_of::<u32>(),
        surf_f32: surf::scratch_len(&f32_config, w, h).unwrap() * size_of::<u32>(),
        surf_packed: surf::scratch_len(&packed, w, h).unwrap() * size_of::<u32>(),
        harris: harris::scratch_len(w, h).unwrap() * size_of::<i32>(),
        keypoints: capacity * size_of::<Keypoint>(),
        descriptors: capacity * size_of::<Descriptor>(),
    }
}

fn kib(bytes: usize) -> String {
    format!("{:.1}", bytes as f64 / 1024.0)
}

#[test]
fn memory_budget_table() {
    // 10_000 is the CLI's default --max-keypoints; 1_000 a typical ROS setting.
    let sizes = [(320, 240), (640, 480), (1920, 1080)];
    println!(
        "| frame | capacity | integral KiB | SURF scratch f32 KiB | SURF scratch packed8 KiB \
         | Harris scratch KiB | keypoints KiB | descriptors KiB | total SURF f32 KiB |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for (w, h) in sizes {
        for capacity in [1_000, 10_000] {
            let b = budget(w, h, capacity);
            let total = b.integral + b.surf_f32 + b.keypoints + b.descriptors;
            println!(
                "| {w}x{h} | {capacity} | {} | {} | {} | {} | {} | {} | {} |",
                kib(b.integral),
                kib(b.surf_f32),
                kib(b.surf_packed),
                kib(b.harris),
                kib(b.keypoints),
                kib(b.descriptors),
                kib(total)
            );
            // What the size functions promise, restated independently (module docs): the
            // integral has a zero row and column, octave 0 samples every 2 pixels with 4 f32
            // intervals (packed: 1 word) per sample, Harris needs the full response map.
            assert_eq!(b.integral, (w + 1) * (h + 1) * 4);
            assert_eq!(b.surf_f32, (w / 2) * (h / 2) * 16);
            assert_eq!(b.surf_f32, 4 * b.surf_packed);
            assert!(b.harris >= w * h * 4 && b.harris < w * h * 4 + 64 * w * 4 + 4096);
            assert_eq!(b.descriptors, capacity * 256);
        }
    }
}
