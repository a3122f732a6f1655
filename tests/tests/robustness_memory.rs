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

/// Writes boat image 1 upscaled (bilinear) to 1920x1080 as a PGM, for measuring the peak RSS of
/// `surfcl detect` on a full-HD frame (docs/ROBUSTNESS.md). Ignored by default: run with
/// `SURFCL_1080P=/tmp/boat-1080p.pgm cargo test -p surfcl-tests --test robustness_memory --
/// --ignored --nocapture`.
#[test]
#[ignore = "writes a 2 MB file for a manual measurement"]
fn write_1080p_boat() {
    let src = surfcl_tests::boat_image(1).unwrap();
    let (w, h) = (1920usize, 1080usize);
    let mut out = Vec::with_capacity(w * h);
    for y in 0..h {
        let fy = (y as f64 + 0.5) * src.height as f64 / h as f64 - 0.5;
        let y0 = fy.floor().clamp(0.0, (src.height - 1) as f64) as usize;
        let y1 = (y0 + 1).min(src.height - 1);
        let ty = (fy - y0 as f64).clamp(0.0, 1.0);
        for x in 0..w {
            let fx = (x as f64 + 0.5) * src.width as f64 / w as f64 - 0.5;
            let x0 = fx.floor().clamp(0.0, (src.width - 1) as f64) as usize;
            let x1 = (x0 + 1).min(src.width - 1);
            let tx = (fx - x0 as f64).clamp(0.0, 1.0);
            let p = |xx: usize, yy: usize| f64::from(src.pixels[yy * src.width + xx]);
            let top = p(x0, y0) * (1.0 - tx) + p(x1, y0) * tx;
            let bottom = p(x0, y1) * (1.0 - tx) + p(x1, y1) * tx;
            out.push((top * (1.0 - ty) + bottom * ty).round() as u8);
        }
    }
    let path = std::env::var_os("SURFCL_1080P")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("surfcl-boat-1080p.pgm"));
    let mut bytes = format!("P5\n{w} {h}\n255\n").into_bytes();
    bytes.extend_from_slice(&out);
    std::fs::write(&path, bytes).unwrap();
    let back = surfcl_cli::io::load_gray(&path).unwrap();
    assert_eq!((back.width, back.height), (w, h));
    println!("wrote {}", path.display());
}
