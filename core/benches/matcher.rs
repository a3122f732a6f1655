//! Brute-force 2-NN matching of N random unit SURF-64 descriptors against themselves (the
//! OpenCV peer is `scripts/peers_cpu.py`: `BFMatcher().knnMatch(k=2)` on the same sizes).
//! Single thread. Half the points have each Laplacian sign, in random order.

use criterion::{Criterion, criterion_group, criterion_main};
use rand::{Rng, SeedableRng, rngs::StdRng};
use std::hint::black_box;
use surfcl_core::{
    Descriptor, DescriptorQ7, Keypoint,
    matcher::{Match, MatchConfig, TrainBest, match_f32, match_q7},
};

fn data(n: usize) -> (Vec<Keypoint>, Vec<Descriptor>, Vec<DescriptorQ7>) {
    let mut rng = StdRng::seed_from_u64(42);
    let mut kps = Vec::with_capacity(n);
    let mut f = Vec::with_capacity(n);
    let mut q = Vec::with_capacity(n);
    for _ in 0..n {
        let mut d = [0.0f32; 64];
        let mut norm = 0.0f32;
        for v in d.iter_mut() {
            *v = rng.gen_range(-1.0..1.0);
            norm += *v * *v;
        }
        let norm = norm.sqrt();
        let mut dq = [0i8; 64];
        for (v, o) in d.iter_mut().zip(dq.iter_mut()) {
            *v /= norm;
            *o = (127.0 * *v).round().clamp(-127.0, 127.0) as i8;
        }
        f.push(d);
        q.push(dq);
        kps.push(Keypoint {
            laplacian: if rng.gen_bool(0.5) { 1 } else { -1 },
            ..Keypoint::default()
        });
    }
    (kps, f, q)
}

fn bench(c: &mut Criterion) {
    for n in [3000usize, 15000] {
        let (kps, f, q) = data(n);
        let mut best = vec![TrainBest::EMPTY; n];
        let mut out = vec![Match::default(); n];
        let mut group = c.benchmark_group(format!("match_n{n}"));
        group.sample_size(10);
        let configs = [
            (
                "nosign",
                MatchConfig {
                    sign_test: false,
                    ..MatchConfig::default()
                },
            ),
            ("sign", MatchConfig::default()),
            (
                "sign_cross",
                MatchConfig {
                    cross_check: true,
                    ..MatchConfig::default()
                },
            ),
        ];
        // The mutual check only at the smaller size (it adds little and the large runs are long).
        let count = if n > 5000 { 2 } else { 3 };
        for (name, config) in configs.into_iter().take(count) {
            group.bench_function(format!("f32_{name}"), |b| {
                b.iter(|| {
                    black_box(match_f32(&kps, &f, &kps, &f, &config, &mut best, &mut out).unwrap())
                })
            });
            group.bench_function(format!("q7_{name}"), |b| {
                b.iter(|| {
                    black_box(match_q7(&kps, &q, &kps, &q, &config, &mut best, &mut out).unwrap())
                })
            });
        }
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
