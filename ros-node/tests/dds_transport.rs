//! DDS transport alone, `#[ignore]`d (run in release, in a private network namespace):
//! `cargo test -p surfcl-ros --release --test dds_transport -- --ignored --nocapture`
//!
//! `transport`: two participants in this process on loopback, as in `soak_latency` but without
//! the node and its backend (whose matching, on the CPU backend, runs while the next frame is in
//! flight and competes for the cores): a best-effort `Image` publisher and an `Image`
//! subscription (the node's). Each round publishes one frame and waits until the subscriber has
//! taken it, deserialised. The subscriber's topic has the node's image-topic resource limit
//! (`SURFCL_TRANSPORT_LIMIT=0`: without, RustDDS then keeps 64 samples).
//! `SURFCL_TRANSPORT_SIZES` (comma-separated WxH mono8 frames, default
//! `640x480,1920x1080,4000x3000`) and `SURFCL_TRANSPORT_FRAMES` (default 100) choose the work;
//! prints p50 / p99 / mean in ms per size.

mod common;

use std::time::{Duration, Instant};

use common::*;
use ros2_client::dds::rustdds::{QosPolicies, QosPolicyBuilder, TopicKind, policy};
use ros2_client::qos::History;
use ros2_client::{Context, Name, NodeName, NodeOptions, QosProfile};
use surfcl_ros::msg::{self, Image};

/// A loopback participant whose sockets get the node's receive buffer (as the node does it).
fn participant(domain: u16) -> Context {
    let bytes = surfcl_ros::node::NodeConfig::default().socket_receive_buffer;
    let before = surfcl_ros::sockets::socket_fds();
    let dp = ros2_client::dds::rustdds::DomainParticipantBuilder::new(domain)
        .with_only_networks([std::net::Ipv4Addr::LOCALHOST])
        .socket_receive_buffer_size(bytes)
        .build()
        .unwrap();
    let new = surfcl_ros::sockets::socket_fds()
        .difference(&before)
        .copied()
        .collect();
    surfcl_ros::sockets::force_receive_buffers(&new, bytes);
    Context::from_domain_participant(dp).unwrap()
}

/// Two loopback participants of `domain` with a spinning node each, named `names`.
fn spinning_pair(
    domain: u16,
    names: (&str, &str),
) -> ((Context, ros2_client::Node), (Context, ros2_client::Node)) {
    let (a, b) = (participant(domain), participant(domain));
    let opts = || {
        NodeOptions::new()
            .enable_rosout(false)
            .start_parameter_services(false)
    };
    let mut na = a
        .new_node(NodeName::new("/", names.0).unwrap(), opts())
        .unwrap();
    let mut nb = b
        .new_node(NodeName::new("/", names.1).unwrap(), opts())
        .unwrap();
    smol::spawn(na.spinner().unwrap().spin()).detach();
    smol::spawn(nb.spinner().unwrap().spin()).detach();
    ((a, na), (b, nb))
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

#[test]
#[ignore]
fn transport() {
    let sizes = std::env::var("SURFCL_TRANSPORT_SIZES")
        .unwrap_or_else(|_| "640x480,1920x1080,4000x3000".into());
    let frames: usize = std::env::var("SURFCL_TRANSPORT_FRAMES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let domain = 171;
    let qos = QosProfile::subscription_default().history(History::KeepLast { depth: 5 });
    let ((_a, mut na), (b, mut nb)) = spinning_pair(domain, ("transport_pub", "transport_sub"));
    let name = Name::parse("/transport_image").unwrap();
    let ta = na.create_topic(&name, msg::image_type(), &qos).unwrap();
    // The subscriber's topic as the node makes its image topic: a sample limit of the history
    // depth (the topic cache otherwise keeps 64 frames). `SURFCL_TRANSPORT_LIMIT=0`: without.
    let tb = if std::env::var("SURFCL_TRANSPORT_LIMIT").as_deref() == Ok("0") {
        nb.create_topic(&name, msg::image_type(), &qos).unwrap()
    } else {
        let limits = QosPolicyBuilder::new()
            .resource_limits(policy::ResourceLimits {
                max_samples: 5,
                max_instances: 1,
                max_samples_per_instance: 5,
            })
            .build();
        b.domain_participant()
            .create_topic(
                "rt/transport_image".into(),
                msg::image_type().dds_msg_type(),
                &QosPolicies::from(&qos).modify_by(&limits),
                TopicKind::NoKey,
            )
            .unwrap()
    };
    let publisher = na.create_publisher::<Image>(&ta, None).unwrap();
    let subscription = nb.create_subscription::<Image>(&tb, None).unwrap();
    let boat = read_pgm(&data("oxford-boat/img1.pgm"));
    // Discovery: until a small frame goes through.
    let small = mono8(&resize_tile(&boat, 64, 48), header(0, "cam"));
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        publisher.publish(small.clone()).unwrap();
        if within(Duration::from_millis(200), subscription.next_message()).is_some() {
            break;
        }
        assert!(Instant::now() < until, "the subscriber never matched");
    }
    for size in sizes.split(',') {
        let (w, h) = size.split_once('x').expect("WxH");
        let (w, h): (usize, usize) = (w.parse().unwrap(), h.parse().unwrap());
        let img = mono8(&resize_tile(&boat, w, h), header(0, "cam"));
        let mut lat = Vec::new();
        let mut lost = 0;
        for i in 0..frames + 10 {
            let mut m = img.clone();
            m.header = header(1 + i as i32, "cam");
            let t0 = Instant::now();
            publisher.publish(m).unwrap();
            let got = within(Duration::from_secs(2), async {
                loop {
                    match subscription.next_message().await {
                        Ok(m) if m.header.stamp == header(1 + i as i32, "cam").stamp => break m,
                        Ok(_) => continue,
                        Err(e) => panic!("{e}"),
                    }
                }
            });
            let dt = t0.elapsed().as_secs_f64() * 1e3;
            match got {
                Some(m) => {
                    assert_eq!(m.data.len(), w * h);
                    if i >= 10 {
                        lat.push(dt);
                    }
                }
                None => lost += 1,
            }
        }
        lat.sort_by(f64::total_cmp);
        let mean = lat.iter().sum::<f64>() / lat.len().max(1) as f64;
        println!(
            "transport {w}x{h} mono8 ({} bytes): n={} p50={:.3} ms p99={:.3} ms mean={mean:.3} ms lost={lost}",
            w * h,
            lat.len(),
            percentile(&lat, 0.5),
            percentile(&lat, 0.99)
        );
    }
}

/// `keypoints`: the node's way back, alone. A `KeypointArray` of `SURFCL_KP_COUNT` (default
/// 4096) keypoints with f32 descriptors (1.1 MB) is encoded as the node encodes it
/// (`wire::encode_detection` into a `BufferPool` buffer), written by a `BulkCdr` writer with the
/// node's output QoS (`SURFCL_KP_OUTPUTS`: reliable, the default, or best_effort; keep last 5)
/// (`SURFCL_KP_WRITER_LIMIT=N`: and a resource limit of N samples) and taken by the test
/// client's reader (bulk decoder, topic limited to 10 samples). Each
/// round waits for the message before the next. Prints p50 / p99 of: `encode`, `write` (the
/// writer's `write` call), `return` (write returned to the message taken and decoded in the
/// client), `total`; and `decode` (the bulk decoder alone on the same bytes, for scale).
/// Also the encoder's page faults per message (fresh memory), and the pool's new buffers
/// (`SURFCL_KP_POOL_MB`: its byte limit; `SURFCL_KP_PREPARE=0`: no buffer made ahead).
/// `SURFCL_KP_HZ=30`: paced, one message per period (a camera's rate) instead of back to back,
/// measured after `SURFCL_KP_WARMUP_S` seconds (default 14: two of RustDDS's 6 s cleanings of a
/// reliable writer's acknowledged samples; the first one, 6 s after the writer was made, finds
/// less than a period of messages, so the pool's steady state starts after the second).
#[test]
#[ignore]
fn keypoints() {
    use common::decode::{BulkDecode, decode_keypoint_array};
    use ros2_client::dds::rustdds::RepresentationIdentifier;
    use smol::stream::StreamExt;
    use surfcl_core::config::DescriptorKind;
    use surfcl_core::{Descriptor, Keypoint};
    use surfcl_ros::msg::KeypointArray;
    use surfcl_ros::node::TopicReliability;
    use surfcl_ros::wire::{BufferPool, BulkCdr, Encoded, encode_detection};

    let env = |k: &str, d: &str| std::env::var(k).unwrap_or_else(|_| d.to_string());
    let frames: usize = env("SURFCL_KP_FRAMES", "200").parse().unwrap();
    let n: usize = env("SURFCL_KP_COUNT", "4096").parse().unwrap();
    let outputs = TopicReliability::parse(&env("SURFCL_KP_OUTPUTS", "reliable")).unwrap();
    let domain = 173;
    // The node's output QoS and the client's (`tests/common`).
    let output_qos = match outputs {
        TopicReliability::Reliable => QosProfile::publisher_default(),
        TopicReliability::BestEffort => QosProfile::subscription_default(),
    };
    let node_qos = output_qos.clone().history(History::KeepLast { depth: 5 });
    let client_qos = output_qos.history(History::KeepLast { depth: 10 });
    let ((a, na), (b, _nb)) = spinning_pair(domain, ("kp_node", "kp_client"));
    let name = Name::parse("/keypoints").unwrap();
    let ta = na
        .create_topic(&name, msg::keypoint_array_type(), &node_qos)
        .unwrap();
    let dds_publisher = a
        .domain_participant()
        .create_publisher(&QosPolicies::from(&node_qos))
        .unwrap();
    // `SURFCL_KP_WRITER_LIMIT=N`: the writer also gets a resource limit of N samples (the node's
    // keypoints writer has none).
    let writer_qos = env("SURFCL_KP_WRITER_LIMIT", "")
        .parse::<i32>()
        .ok()
        .map(|n| {
            QosPolicies::from(&node_qos).modify_by(
                &QosPolicyBuilder::new()
                    .resource_limits(policy::ResourceLimits {
                        max_samples: n,
                        max_instances: 1,
                        max_samples_per_instance: n,
                    })
                    .build(),
            )
        });
    let writer = dds_publisher
        .create_datawriter_no_key::<Encoded, BulkCdr>(&ta, writer_qos)
        .unwrap();
    let limits = QosPolicyBuilder::new()
        .resource_limits(policy::ResourceLimits {
            max_samples: 10,
            max_instances: 1,
            max_samples_per_instance: 10,
        })
        .build();
    let tb = b
        .domain_participant()
        .create_topic(
            "rt/keypoints".into(),
            msg::keypoint_array_type().dds_msg_type(),
            &QosPolicies::from(&client_qos).modify_by(&limits),
            TopicKind::NoKey,
        )
        .unwrap();
    let subscriber = b
        .domain_participant()
        .create_subscriber(&QosPolicies::from(&client_qos))
        .unwrap();
    let reader = subscriber
        .create_simple_datareader_no_key::<KeypointArray, BulkDecode>(&tb, None)
        .unwrap();
    let next = || {
        within(Duration::from_secs(2), async {
            let stream = reader.as_async_stream();
            let mut stream = std::pin::pin!(stream);
            stream.next().await.unwrap().unwrap().into_value()
        })
    };
    let keypoints: Vec<Keypoint> = (0..n)
        .map(|i| Keypoint {
            x: (i % 1920) as f32 + 0.25,
            y: (i / 1920) as f32 + 0.5,
            scale: 1.6 + (i % 7) as f32,
            orientation: (i % 628) as f32 * 0.01,
            response: 0.001 * (i % 97) as f32,
            laplacian: if i % 2 == 0 { 1 } else { -1 },
            ..Keypoint::default()
        })
        .collect();
    let descriptors: Vec<Descriptor> = (0..n)
        .map(|i| std::array::from_fn(|j| ((i * 64 + j) % 251) as f32 / 251.0))
        .collect();
    // `SURFCL_KP_POOL_MB`: the pool's byte limit (default the node's); 9 with
    // `SURFCL_KP_PREPARE=0` is the pool before 2026-11-26 (8 buffers of 1.1 MB, nothing made
    // ahead).
    let pool = match env("SURFCL_KP_POOL_MB", "").parse::<usize>() {
        Ok(mb) => BufferPool::new(mb << 20),
        Err(_) => BufferPool::default(),
    };
    let prepare = env("SURFCL_KP_PREPARE", "1") != "0";
    // The page faults of this thread (minor: memory mapped on first touch), from
    // /proc/thread-self/stat (its tenth field).
    let thread_faults = || -> u64 {
        std::fs::read_to_string("/proc/thread-self/stat")
            .ok()
            .and_then(|s| {
                let after_name = &s[s.rfind(')')? + 1..];
                after_name.split_whitespace().nth(7)?.parse().ok()
            })
            .unwrap_or(0)
    };
    let send = |i: i32| {
        let f0 = thread_faults();
        let t0 = Instant::now();
        let bytes = encode_detection(
            pool.take(),
            &header(i, "cam"),
            &keypoints,
            &descriptors,
            DescriptorKind::F32,
            0,
        );
        let t1 = Instant::now();
        let faults = thread_faults() - f0;
        let capacity = bytes.capacity();
        writer
            .write(
                Encoded(pool.bytes(bytes)),
                Some(ros2_client::dds::rustdds::Timestamp::now()),
            )
            .unwrap();
        (t0, t1, Instant::now(), faults, capacity)
    };
    // Discovery: until a message goes through.
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        send(0);
        if next().is_some() {
            break;
        }
        assert!(Instant::now() < until, "the reader never matched");
    }
    while let Ok(Some(_)) = reader.try_take_one() {}
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let (mut enc, mut wr, mut ret, mut tot, mut dec) = (vec![], vec![], vec![], vec![], vec![]);
    // Page faults while encoding (fresh memory), per message.
    let mut enc_faults = vec![];
    let mut lost = 0;
    let size = encode_detection(
        Vec::new(),
        &header(0, "cam"),
        &keypoints,
        &descriptors,
        DescriptorKind::F32,
        0,
    )
    .len();
    // `SURFCL_KP_DECODE=0`: not the decoder alone (for profiles of the way back).
    let time_decode = env("SURFCL_KP_DECODE", "1") != "0";
    let hz: f64 = env("SURFCL_KP_HZ", "0").parse().unwrap();
    let warm_up_s: f64 = env("SURFCL_KP_WARMUP_S", "14").parse().unwrap();
    assert!((0.0..=1000.0).contains(&hz) && (0.0..=600.0).contains(&warm_up_s));
    let period = (hz > 0.0).then(|| Duration::from_secs_f64(1.0 / hz));
    let warm_up = match period {
        Some(_) => (warm_up_s * hz).ceil() as usize,
        None => 10,
    };
    let mut pacer = Pacer::new(period);
    // Messages encoded into new memory (the pool had no buffer) while measured.
    let mut new_before = 0;
    for i in 0..frames + warm_up {
        pacer.wait(i >= warm_up);
        if i == warm_up {
            new_before = pool.new_buffers();
        }
        let stamp = 1 + i as i32;
        let (t0, t1, t2, faults, capacity) = send(stamp);
        let got = within(Duration::from_secs(2), async {
            loop {
                let stream = reader.as_async_stream();
                let mut stream = std::pin::pin!(stream);
                let m = stream.next().await.unwrap().unwrap().into_value();
                if m.header.stamp == header(stamp, "cam").stamp {
                    break m;
                }
            }
        });
        let t3 = Instant::now();
        // As the node does once a frame is out: the next buffer mapped ahead if none is free.
        if prepare {
            pool.prepare(capacity);
        }
        let Some(m) = got else {
            lost += 1;
            continue;
        };
        assert_eq!(m.keypoints.len(), n);
        if i >= warm_up {
            enc.push(ms(t1 - t0));
            enc_faults.push(faults as f64);
            wr.push(ms(t2 - t1));
            ret.push(ms(t3 - t2));
            tot.push(ms(t3 - t0));
        }
        if i >= warm_up && time_decode {
            // The decoder alone, on the bytes the node sent.
            let bytes = encode_detection(
                Vec::new(),
                &header(stamp, "cam"),
                &keypoints,
                &descriptors,
                DescriptorKind::F32,
                0,
            );
            let t = Instant::now();
            let m2 = decode_keypoint_array(&bytes, RepresentationIdentifier::CDR_LE).unwrap();
            dec.push(ms(t.elapsed()));
            assert_eq!(m2.keypoints.len(), n);
        }
    }
    let report = |label: &str, v: &mut Vec<f64>| {
        if v.is_empty() {
            return;
        }
        v.sort_by(f64::total_cmp);
        println!(
            "  {label:<8} p50={:.3} ms p99={:.3} ms",
            percentile(v, 0.5),
            percentile(v, 0.99)
        );
    };
    let rss_mib = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kib| kib / 1024);
    println!(
        "keypoints {n} f32 ({} bytes), outputs {}, {}: n={} lost={lost}, RSS {rss_mib} MiB; \
         buffers new {} (while measured {}), kept {:.1} MiB",
        size,
        outputs.name(),
        match period {
            Some(_) => format!(
                "paced {hz} Hz after {warm_up} messages, {} late",
                pacer.late()
            ),
            None => "back to back".to_string(),
        },
        tot.len(),
        pool.new_buffers(),
        pool.new_buffers() - new_before,
        pool.kept_bytes() as f64 / 1048576.0,
    );
    report("encode", &mut enc);
    let mean_faults = enc_faults.iter().sum::<f64>() / enc_faults.len().max(1) as f64;
    enc_faults.sort_by(f64::total_cmp);
    if !enc_faults.is_empty() {
        println!(
            "  encode page faults per message: p50={} p99={} mean={mean_faults:.1} (4 KiB each; {} buffers made ahead)",
            percentile(&enc_faults, 0.5),
            percentile(&enc_faults, 0.99),
            pool.prepared_buffers()
        );
    }
    report("write", &mut wr);
    report("return", &mut ret);
    report("total", &mut tot);
    report("decode", &mut dec);
}
