//! Long-running measurements, `#[ignore]`d (run them in release, one at a time):
//! `cargo test -p surfcl-ros --release --test soak_latency -- --ignored --nocapture --test-threads 1`
//! - `latency`: image publish -> keypoints received, with the node's per-stage breakdown
//!   (p50/p99 of each stage). Parameterised from the environment, so that the same test binary
//!   runs on a GPU machine:
//!   `SURFCL_LATENCY_SIZE` (WxH, default 640x480), `SURFCL_LATENCY_BACKEND` (cpu|opencl|auto,
//!   default cpu), `SURFCL_LATENCY_DEVICE` (OpenCL device index or name part),
//!   `SURFCL_LATENCY_FRAMES` (default 200), `SURFCL_LATENCY_ENCODING` (mono8|rgb8|bgr8, default
//!   mono8), `SURFCL_LATENCY_MAX_KEYPOINTS` (default 4096), `SURFCL_LATENCY_DESCRIPTOR`
//!   (f32|q7, default f32), `SURFCL_LATENCY_RELIABLE=1` (reliable image QoS; otherwise the
//!   client publishes images best effort, as a camera driver on the sensor-data profile does),
//!   `SURFCL_LATENCY_OUTPUTS` (reliable|best_effort, default reliable: the node's
//!   `output_reliability`, and the client's subscriptions to match),
//!   `SURFCL_LATENCY_DECODER` (bulk|serde, default bulk: how the client decodes the keypoints;
//!   bulk is `surfcl_ros::wire`'s decoder, a block copy as in rclcpp, serde is ros2-client's
//!   value-by-value path), `SURFCL_LATENCY_PROFILE=1` (the node's `profile` parameter:
//!   OpenCL device times of upload, kernels and readback in the breakdown, at their cost),
//!   `SURFCL_LATENCY_P50_MAX_MS` / `SURFCL_LATENCY_P99_MAX_MS` (fail above these),
//!   `SURFCL_LATENCY_JSON` (also write the result there). Paced mode, `SURFCL_LATENCY_HZ=30`:
//!   frames are published at that rate (a camera's), each after the previous one's keypoints
//!   came back or were given up on, and measured after a warm-up of `SURFCL_LATENCY_WARMUP_S`
//!   seconds (default 14: two of RustDDS's 6 s cleanings of a reliable writer's acknowledged
//!   samples, the first of which, 6 s after the node started, finds less than a period of
//!   messages: the node's output buffers are in their steady state after the second); without
//!   it frames go back to back after 10 warm-up frames;
//! - `soak_2000_frames_at_30hz`: 2000 frames at 30 Hz; median resident memory of the last 600
//!   frames is less than 5 % above the median of the 600 frames after warm-up (400 frames).
//!   `SURFCL_SOAK_SIZE` (WxH; default: four sizes around 320x240) and `SURFCL_SOAK_BACKEND`
//!   (default cpu) choose the frames and the backend.

mod common;

use std::time::{Duration, Instant};

use common::*;
use surfcl_core::config::{BackendChoice, DescriptorKind, Named};
use surfcl_ros::node::{StageTimes, TopicReliability};

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i]
}

fn env_or(name: &str, default: &str) -> String {
    std::env::var(name)
        .ok()
        .filter(|v| !v.trim().is_empty())
        .unwrap_or_else(|| default.to_string())
}

fn parse_size(s: &str) -> (usize, usize) {
    let (w, h) = s
        .split_once('x')
        .unwrap_or_else(|| panic!("size must be WxH, got {s:?}"));
    (
        w.trim().parse().expect("width"),
        h.trim().parse().expect("height"),
    )
}

fn backend_kind(s: &str) -> BackendChoice {
    BackendChoice::from_name(s).unwrap_or_else(|e| panic!("{e}, got {s:?}"))
}

/// A message of `encoding` whose luminance is `g`.
fn encode(g: &Gray, encoding: &str, h: surfcl_ros::msg::Header) -> surfcl_ros::msg::Image {
    match encoding {
        "mono8" => mono8(g, h),
        "rgb8" => rgb8(g, h),
        "bgr8" => surfcl_ros::msg::Image {
            encoding: "bgr8".into(),
            ..rgb8(g, h)
        },
        other => panic!("encoding must be mono8, rgb8 or bgr8, got {other:?}"),
    }
}

#[test]
#[ignore]
fn latency() {
    let size = env_or("SURFCL_LATENCY_SIZE", "640x480");
    let (w, h) = parse_size(&size);
    let backend = env_or("SURFCL_LATENCY_BACKEND", "cpu");
    let device = env_or("SURFCL_LATENCY_DEVICE", "");
    let frames: u32 = env_or("SURFCL_LATENCY_FRAMES", "200").parse().unwrap();
    let encoding = env_or("SURFCL_LATENCY_ENCODING", "mono8");
    let max_kp: i64 = env_or("SURFCL_LATENCY_MAX_KEYPOINTS", "4096")
        .parse()
        .unwrap();
    let descriptor = DescriptorKind::from_name(&env_or("SURFCL_LATENCY_DESCRIPTOR", "f32"))
        .unwrap_or_else(|e| panic!("SURFCL_LATENCY_DESCRIPTOR: {e}"));
    let reliable = env_or("SURFCL_LATENCY_RELIABLE", "0") == "1";
    let outputs = TopicReliability::parse(&env_or("SURFCL_LATENCY_OUTPUTS", "reliable"))
        .expect("SURFCL_LATENCY_OUTPUTS must be reliable or best_effort");
    let decoder = env_or("SURFCL_LATENCY_DECODER", "bulk");
    // OpenCL device times per stage (upload, kernels, readback), at their cost: off as deployed.
    let profile = env_or("SURFCL_LATENCY_PROFILE", "0") == "1";
    assert!(
        decoder == "bulk" || decoder == "serde",
        "SURFCL_LATENCY_DECODER must be bulk or serde, got {decoder:?}"
    );
    // Paced mode: a camera's rate, measured after a warm-up longer than RustDDS's cache
    // cleaning period (6 s), which is when a reliable writer lets its acknowledged samples go.
    let hz: f64 = env_or("SURFCL_LATENCY_HZ", "0")
        .parse()
        .expect("SURFCL_LATENCY_HZ must be a number (frames per second; 0: back to back)");
    let warm_up_s: f64 = env_or("SURFCL_LATENCY_WARMUP_S", "14")
        .parse()
        .expect("SURFCL_LATENCY_WARMUP_S must be a number of seconds");
    assert!(
        (0.0..=1000.0).contains(&hz) && (0.0..=600.0).contains(&warm_up_s),
        "SURFCL_LATENCY_HZ in 0..=1000, SURFCL_LATENCY_WARMUP_S in 0..=600"
    );
    let period = (hz > 0.0).then(|| Duration::from_secs_f64(1.0 / hz));
    let warm_up = match period {
        Some(_) => (warm_up_s * hz).ceil() as u32,
        None => 10u32,
    };
    // A distinct domain per configuration, so that runs in a row do not meet stale peers.
    let domain = 131 + (w as u16 % 7) * 3 + u16::from(backend == "opencl");

    let mut params = test_params();
    params.backend = backend_kind(&backend);
    params.device = device.clone();
    params.max_keypoints = max_kp;
    params.descriptor = descriptor;
    params.profile = profile;
    let node = start_node(domain, factory(), |c| {
        c.params = params;
        if reliable {
            c.image_reliability = TopicReliability::Reliable;
        }
        c.output_reliability = outputs;
    });
    let client = Client::with_options(
        domain,
        "/",
        "/image",
        ClientOptions {
            images: if reliable {
                TopicReliability::Reliable
            } else {
                TopicReliability::BestEffort
            },
            outputs,
            bulk_keypoints: decoder == "bulk",
        },
    );
    client.wait_connected(Duration::from_secs(30));
    let img = resize_tile(&read_pgm(&data("oxford-boat/img1.pgm")), w, h);
    // Two pictures, alternated, so that matching has work and the frames differ.
    let img2 = resize_tile(&read_pgm(&data("oxford-boat/img2.pgm")), w, h);
    let messages = [
        encode(&img, &encoding, header(0, "cam")),
        encode(&img2, &encoding, header(0, "cam")),
    ];
    let mut lat = Vec::new();
    let mut stages: Vec<StageTimes> = Vec::new();
    let mut kps = 0;
    let mut lost_frames = 0;
    // Paced mode: counts the measured frames that went out late.
    let mut pacer = Pacer::new(period);
    let run_start = Instant::now();
    let mut measured_from = run_start;
    // Keypoints messages the node encoded into new memory before the measured frames.
    let mut new_before = 0;
    for i in 0..frames + warm_up {
        pacer.wait(i >= warm_up);
        if i == warm_up {
            measured_from = Instant::now();
            new_before = node.stats().output_buffers_new;
        }
        let mut msg = messages[i as usize % 2].clone();
        msg.header = header(1000 + i as i32, "cam");
        let processed_before = node.stats().processed;
        let t0 = Instant::now();
        client.images.publish(msg).unwrap();
        let got = take_stamped(
            &client.keypoints,
            ros2_client::builtin_interfaces::Time::new(1000 + i as i32, 0),
            Duration::from_secs(10),
            |k| k.header.stamp,
        );
        let elapsed = t0.elapsed().as_secs_f64() * 1e3;
        match got {
            Some(k) => {
                kps = k.keypoints.len();
                // The node updates its counters right after publishing: wait (bounded) for them.
                let until = Instant::now() + Duration::from_millis(500);
                let mut s = node.stats();
                while s.processed <= processed_before && Instant::now() < until {
                    std::thread::sleep(Duration::from_micros(200));
                    s = node.stats();
                }
                if i >= warm_up {
                    lat.push(elapsed);
                    stages.push(s.last_stages);
                }
            }
            None => {
                lost_frames += 1;
                let s = node.stats();
                assert_eq!(s.failed, 0, "the node failed a frame: {}", s.last_error);
            }
        }
        // Drain the matches so they do not pile up in the client.
        while let Ok(Some(_)) = client.matches.take() {}
    }
    let s = node.stats();
    let mut sorted = lat.clone();
    sorted.sort_by(f64::total_cmp);
    let (p50, p99) = (percentile(&sorted, 0.5), percentile(&sorted, 0.99));
    let max = sorted.last().copied().unwrap_or(f64::NAN);
    let late = pacer.late();
    let mode = match period {
        Some(_) => format!(
            "paced {hz} Hz after {:.1} s warm-up ({warm_up} frames), measured over {:.1} s, {late} frames late",
            (measured_from - run_start).as_secs_f64(),
            measured_from.elapsed().as_secs_f64()
        ),
        None => format!("back to back after {warm_up} frames"),
    };
    println!(
        "latency {w}x{h} {encoding} ({}; {kps} keypoints, max_keypoints {max_kp}, descriptor {descriptor:?}, image QoS {}, outputs {}, client decoder {decoder}, profile {profile}; {mode}): \
         n={} p50={p50:.2} ms p99={p99:.2} ms max={max:.2} ms; frames without output {lost_frames}; node stats: received {} (into input frames {}) processed {} dropped {} lost {} failed {}; keypoints buffers new {} (while measured {}), made ahead {}, kept {:.1} MiB; RSS {} MiB",
        s.backend,
        if reliable { "reliable" } else { "best effort" },
        outputs.name(),
        lat.len(),
        s.received,
        s.received_into_frames,
        s.processed,
        s.dropped_stale,
        s.lost,
        s.failed,
        s.output_buffers_new,
        s.output_buffers_new - new_before,
        s.output_buffers_prepared,
        s.output_buffers_kept_bytes as f64 / 1048576.0,
        rss_kib() / 1024,
    );
    let mut json_stages = Vec::new();
    println!("  stage             p50 ms    p99 ms   mean ms");
    for k in 0..StageTimes::default().named().len() {
        let mut v: Vec<f64> = stages.iter().map(|st| st.named()[k].1).collect();
        let mean = v.iter().sum::<f64>() / v.len().max(1) as f64;
        v.sort_by(f64::total_cmp);
        let name = StageTimes::default().named()[k].0;
        let (a, b) = (percentile(&v, 0.5), percentile(&v, 0.99));
        println!("  {name:<15} {a:>8.3} {b:>9.3} {mean:>9.3}");
        json_stages.push(format!(
            "\"{name}\": {{\"p50\": {a:.4}, \"p99\": {b:.4}, \"mean\": {mean:.4}}}"
        ));
    }
    // What the stages do not cover: the keypoints' way back to the client (sent by the node,
    // reassembled and deserialised here). The node publishes keypoints before it matches, so
    // its share of the latency is `keypoints_out`, not `node`.
    let mut back: Vec<f64> = lat
        .iter()
        .zip(&stages)
        .map(|(l, st)| l - st.transport_ms - st.keypoints_out_ms)
        .collect();
    back.sort_by(f64::total_cmp);
    println!(
        "  {:<15} {:>8.3} {:>9.3}   (total minus transport minus keypoints_out: keypoints back to the client)",
        "return",
        percentile(&back, 0.5),
        percentile(&back, 0.99)
    );
    if let Ok(path) = std::env::var("SURFCL_LATENCY_JSON") {
        let json = format!(
            "{{\"size\": \"{w}x{h}\", \"encoding\": \"{encoding}\", \"backend\": {:?}, \"keypoints\": {kps}, \"max_keypoints\": {max_kp}, \"decoder\": \"{decoder}\", \"outputs\": \"{}\", \"image_qos\": \"{}\", \"frames\": {}, \"hz\": {hz}, \"warm_up_frames\": {warm_up}, \"late\": {late}, \"p50_ms\": {p50:.4}, \"p99_ms\": {p99:.4}, \"max_ms\": {max:.4}, \"without_output\": {lost_frames}, \"received_into_frames\": {}, \"buffers_new_measured\": {}, \"buffers_prepared\": {}, \"rss_mib\": {}, \"stages\": {{{}}}}}\n",
            s.backend,
            outputs.name(),
            if reliable { "reliable" } else { "best_effort" },
            lat.len(),
            s.received_into_frames,
            s.output_buffers_new - new_before,
            s.output_buffers_prepared,
            rss_kib() / 1024,
            json_stages.join(", ")
        );
        let mut all = std::fs::read_to_string(&path).unwrap_or_default();
        all.push_str(&json);
        std::fs::write(&path, all).unwrap();
    }
    assert!(
        lat.len() >= frames as usize * 9 / 10,
        "too many frames lost: {} of {frames}",
        lat.len()
    );
    assert_eq!(s.failed, 0, "frames failed: {}", s.last_error);
    // Paced: the run is at the camera's rate only if frames went out on time.
    assert!(
        late as usize <= frames as usize / 10,
        "{late} of {frames} frames were published late: the rate is too high for this machine"
    );
    // The breakdown must account for the node's time: the stages it is made of add up.
    for st in &stages {
        let parts =
            st.queue_ms + st.convert_ms + st.detect_ms + st.match_ms + st.build_ms + st.publish_ms;
        assert!(
            parts <= st.node_ms + 1e-6 && st.node_ms - parts < 0.5 + 0.05 * st.node_ms,
            "stages {st:?} do not add up to the node's time"
        );
        let before_keypoints = st.queue_ms + st.convert_ms + st.detect_ms;
        assert!(
            st.keypoints_out_ms >= before_keypoints - 1e-6 && st.keypoints_out_ms <= st.node_ms,
            "keypoints_out {st:?} is not between detection's end and the node's end"
        );
    }
    for (var, value) in [
        ("SURFCL_LATENCY_P50_MAX_MS", p50),
        ("SURFCL_LATENCY_P99_MAX_MS", p99),
    ] {
        if let Ok(limit) = std::env::var(var) {
            let limit: f64 = limit.parse().unwrap();
            assert!(value <= limit, "{var}: {value:.2} ms > {limit} ms");
        }
    }
    node.stop();
}

#[test]
#[ignore]
fn soak_2000_frames_at_30hz() {
    // Frames before the memory baseline is taken (allocator pools and DDS caches fill up).
    const WARM_UP: u32 = 400;
    let size = std::env::var("SURFCL_SOAK_SIZE").ok();
    let domain = 132 + u16::from(size.is_some());
    let mut params = test_params();
    params.backend = backend_kind(&env_or("SURFCL_SOAK_BACKEND", "cpu"));
    let node = start_node(domain, factory(), |c| c.params = params);
    let client = Client::new(domain, "/", "/image");
    client.wait_connected(Duration::from_secs(30));
    let base = read_pgm(&data("oxford-boat/img1.pgm"));
    let frames: Vec<_> = match &size {
        // Four frames of the one size (tiled at different offsets of the boat).
        Some(s) => {
            let (w, h) = parse_size(s);
            (0..4)
                .map(|k| resize_tile(&resize_tile(&base, 850 - 16 * k, 680), w, h))
                .collect()
        }
        None => (0..4)
            .map(|k| resize_tile(&half(&base), 320 + 8 * k, 240))
            .collect(),
    };
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
        "soak {}: {:.1} s, received {received} keypoint messages, node stats {s:?}; median RSS frames {WARM_UP}..{} {warm_rss} KiB, frames 1400..2000 {end_rss} KiB ({growth:+.2} %)",
        size.as_deref().unwrap_or("320x240 (4 sizes)"),
        start.elapsed().as_secs_f64(),
        WARM_UP + 600
    );
    // Every frame is accounted for: processed, replaced while waiting, or counted as lost.
    assert!(
        s.processed + s.dropped_stale + s.lost + 50 >= 2000,
        "frames vanished: {s:?}"
    );
    // All outputs at 30 Hz where the backend keeps up (default: the small frames on the CPU);
    // `SURFCL_SOAK_MIN_OUTPUTS` lowers it for a slow backend on large frames.
    let min_outputs: u64 = env_or("SURFCL_SOAK_MIN_OUTPUTS", "1000").parse().unwrap();
    assert!(received > min_outputs, "too few outputs: {received}");
    assert!(growth < 5.0, "RSS grew {growth:.2} %");
    node.stop();
}
