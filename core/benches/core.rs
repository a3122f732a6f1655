//! SURF on the CPU reference: integral image + detection + orientation + SURF-64 on the Oxford
//! boat img1 (850x680), in `f32` and packed 8-bit mode, and the stages alone.
//!
//! Run: `cargo bench -p surfcl-core --bench core`.

mod support;

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use surfcl_core::describe::{assign_orientation, describe_all};
use surfcl_core::integral::integral_len;
use surfcl_core::surf::{self, Precision, SurfConfig};
use surfcl_core::{Descriptor, GrayImage, IntegralImage, Keypoint, KeypointBuffer, KeypointSink};

fn bench(c: &mut Criterion) {
    let (pixels, w, h) = support::boat_img1();
    let image = GrayImage::new(&pixels, w, h).unwrap();
    let mut table = vec![0u32; integral_len(w, h).unwrap()];
    let mut storage = vec![Keypoint::default(); 20_000];
    let mut descriptors: Vec<Descriptor> = vec![[0.0; 64]; 20_000];

    let mut group = c.benchmark_group("surf_boat_img1");
    group.sample_size(20);
    for (name, precision) in [("f32", Precision::F32), ("packed8", Precision::Packed8)] {
        let config = SurfConfig {
            precision,
            ..SurfConfig::default()
        };
        let mut scratch = vec![0u32; surf::scratch_len(&config, w, h).unwrap()];
        group.bench_function(format!("detect_describe_{name}"), |b| {
            b.iter(|| {
                let ii = IntegralImage::compute(&image, &mut table).unwrap();
                let mut sink = KeypointBuffer::new(&mut storage);
                surf::detect(&ii, &config, &mut scratch, &mut sink).unwrap();
                let n = sink.len();
                describe_all(&ii, sink.points_mut(), false, &mut descriptors[..n]).unwrap();
                black_box(n)
            })
        });
        group.bench_function(format!("detect_{name}"), |b| {
            b.iter(|| {
                let ii = IntegralImage::compute(&image, &mut table).unwrap();
                let mut sink = KeypointBuffer::new(&mut storage);
                surf::detect(&ii, &config, &mut scratch, &mut sink).unwrap();
                black_box(sink.len())
            })
        });
    }
    // Description alone (oriented and upright) of the default f32 keypoints.
    let config = SurfConfig::default();
    let mut scratch = vec![0u32; surf::scratch_len(&config, w, h).unwrap()];
    let ii = IntegralImage::compute(&image, &mut table).unwrap();
    let mut sink = KeypointBuffer::new(&mut storage);
    surf::detect(&ii, &config, &mut scratch, &mut sink).unwrap();
    let mut points = sink.points().to_vec();
    let n = points.len();
    println!("boat img1: {n} keypoints at the default configuration");
    for (name, upright) in [("describe_oriented", false), ("describe_upright", true)] {
        group.bench_function(name, |b| {
            b.iter(|| {
                describe_all(&ii, &mut points, upright, &mut descriptors[..n]).unwrap();
                black_box(descriptors[0][0])
            })
        });
    }
    // Orientation alone (part of `describe_oriented`).
    group.bench_function("orientation", |b| {
        b.iter(|| {
            for kp in points.iter_mut() {
                assign_orientation(&ii, kp);
            }
            black_box(points[0].orientation)
        })
    });
    // The response maps of every octave, from table reads (the MCU path) and from column sums
    // (the std backend's path, `OctaveFill::fill_rows` with a column scratch): same bits, same
    // run.
    let ii = IntegralImage::compute(&image, &mut table).unwrap();
    let mut columns = vec![0u32; surf::column_scratch_len(w)];
    for with_columns in [false, true] {
        let name = if with_columns {
            "fill_column_sums"
        } else {
            "fill_table_reads"
        };
        group.bench_function(name, |b| {
            b.iter(|| {
                for octave in 0..u32::from(config.octaves) {
                    let fill = surf::OctaveFill::new(&ii, &config, octave).unwrap();
                    let (gw, gh) = fill.grid();
                    let maps = &mut scratch[..gw * gh * 4];
                    let columns: &mut [u32] = if with_columns { &mut columns } else { &mut [] };
                    fill.fill_rows::<surf::PortableBoxSums>(0..gh, maps, columns)
                        .unwrap();
                }
                black_box(scratch[0])
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
