//! Long-running measurements, `#[ignore]`d (run them in release, one at a time):
//! `cargo test -p surfcl-ros --release --test soak_latency -- --ignored --nocapture --test-threads 1`
//! - latency: image publish -> keypoints received, 640x480 mono8, CPU backend, p50/p99;
//! - soak: 2000 frames at 30 Hz; median resident memory of the last 600 frames is less than 5 %
//!   above the median of the 600 frames after warm-up (400 frames).

mod common;

use std::time::{Duration, Instant};

use common::*;

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i]
}

#[test]
#[ignore]
fn latency_640x480_cpu() {
    let domain = 131;
    let node = start_node(domain, factory(), |c| c.params = test_params());
    let client = Client::new(domain, "/", "/image");
    client.wait_connected(Duration::from_secs(30));
    let img = resize_tile(&read_pgm(&data("oxford-boat/img1.pgm")), 640, 480);
    let frames = 200;
    let mut lat = Vec::new();
    let mut kps = 0;
    for i in 0..frames + 10 {
        let msg = mono8(&img, header(1000 + i, "cam"));
        let t0 = Instant::now();
        client.images.publish(msg).unwrap();
        let got = take_stamped(
            &client.keypoints,
            ros2_client::builtin_interfaces::Time::new(1000 + i, 0),
            Duration::from_secs(5),
            |k| k.header.stamp,
        );
        if let Some(k) = got {
            kps = k.keypoints.len();
            if i >= 10 {
                lat.push(t0.elapsed().as_secs_f64() * 1e3);
            }
        }
    }
    lat.sort_by(f64::total_cmp);
    let s = node.stats();
    println!(
        "latency 640x480 mono8 ({}; {kps} keypoints): n={} p50={:.2} ms p99={:.2} ms max={:.2} ms; last processing {:.2} ms",
        s.backend,
        lat.len(),
        percentile(&lat, 0.5),
        percentile(&lat, 0.99),
        lat.last().copied().unwrap_or(0.0),
        s.last_processing_ms
    );
    assert!(
        lat.len() >= frames as usize * 9 / 10,
        "too many frames lost: {}",
        lat.len()
    );
    node.stop();
}

#[test]
#[ignore]
fn soak_2000_frames_at_30hz() {
    // Frames before the memory baseline is taken (allocator pools and DDS caches fill up).
    const WARM_UP: u32 = 400;
    let domain = 132;
    let node = start_node(domain, factory(), |c| c.params = test_params());
    let client = Client::new(domain, "/", "/image");
    client.wait_connected(Duration::from_secs(30));
    let base = read_pgm(&data("oxford-boat/img1.pgm"));
    let frames: Vec<_> = (0..4)
        .map(|k| resize_tile(&half(&base), 320 + 8 * k, 240))
        .collect();
    let period = Duration::from_secs_f64(1.0 / 30.0);
    let start = Instant::now();
    let mut series = Vec::new();
    let mut received = 0u64;
    for i in 0..2000u32 {
        let due = start + period * i;
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        client
            .images
            .publish(mono8(
                &frames[i as usize % frames.len()],
                header(i as i32, "cam"),
            ))
            .unwrap();
        while let Ok(Some(_)) = client.keypoints.take() {
            received += 1;
        }
        while let Ok(Some(_)) = client.matches.take() {}
        if i % 50 == 0 {
            series.push((i, rss_kib()));
        }
    }
    std::thread::sleep(Duration::from_millis(500));
    while let Ok(Some(_)) = client.keypoints.take() {
        received += 1;
    }
    // RSS moves by a few per cent from sample to sample (allocator arenas of several threads,
    // four frame sizes), so growth is judged on medians: the window right after warm-up
    // against the last 600 frames, sampled every 50 frames.
    let median = |from: u32, to: u32| {
        let mut v: Vec<u64> = series
            .iter()
            .filter(|(i, _)| (from..to).contains(i))
            .map(|s| s.1)
            .collect();
        v.sort_unstable();
        v[v.len() / 2]
    };
    let warm_rss = median(WARM_UP, WARM_UP + 600);
    let end_rss = median(1400, 2000);
    let s = node.stats();
    let growth = (end_rss as f64 - warm_rss as f64) / warm_rss as f64 * 100.0;
    println!("soak RSS every 50 frames (frame, KiB): {series:?}");
    println!(
        "soak: {:.1} s, received {received} keypoint messages, node stats {s:?}; median RSS frames {WARM_UP}..{} {warm_rss} KiB, frames 1400..2000 {end_rss} KiB ({growth:+.2} %)",
        start.elapsed().as_secs_f64(),
        WARM_UP + 600
    );
    assert!(
        s.processed + s.dropped_stale + 50 >= 2000,
        "frames vanished: {s:?}"
    );
    assert!(received > 1000, "too few outputs: {received}");
    assert!(growth < 5.0, "RSS grew {growth:.2} %");
    node.stop();
}
