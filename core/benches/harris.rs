//! Harris detection (response map, threshold, NMS, strongest 2000) on the boat image, cropped to
//! 640x480 and tiled to 1920x1080 (the OpenCV peer is `scripts/peers_cpu.py`:
//! `cv2.cornerHarris(img, 3, 3, 0.04)` on the same images, response only). Single thread.

mod support;

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use surfcl_core::{
    GrayImage, Keypoint, KeypointBuffer, KeypointSink,
    harris::{self, HarrisConfig},
};

/// Top-left crop (640x480) or tiling (1920x1080), the same as the peer script.
pub fn sized(src: &[u8], sw: usize, sh: usize, w: usize, h: usize) -> Vec<u8> {
    (0..w * h)
        .map(|i| src[(i / w % sh) * sw + i % w % sw])
        .collect()
}

fn bench(c: &mut Criterion) {
    let (boat, bw, bh) = support::boat_img1();
    let mut group = c.benchmark_group("harris");
    group.sample_size(20);
    for (w, h) in [(640usize, 480usize), (1920, 1080)] {
        let pixels = sized(&boat, bw, bh, w, h);
        let image = GrayImage::new(&pixels, w, h).unwrap();
        let config = HarrisConfig::default();
        let mut scratch = vec![0i32; harris::scratch_len(w, h).unwrap()];
        let mut storage = vec![Keypoint::default(); 2000];
        let mut map = vec![0.0f32; w * h];
        group.bench_function(format!("detect_{w}x{h}"), |b| {
            b.iter(|| {
                let mut sink = KeypointBuffer::new(&mut storage);
                let stats = harris::detect(&image, &config, &mut scratch, &mut sink).unwrap();
                sink.sort();
                black_box(stats)
            })
        });
        group.bench_function(format!("response_{w}x{h}"), |b| {
            b.iter(|| {
                harris::response_map(&image, &config, &mut scratch, &mut map).unwrap();
                black_box(map[w + 1])
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
