//! Fault tests of the node: a backend whose detection, matching or opening fails on a chosen
//! frame, and two nodes in one process. Each test has its own ROS domain id (141..144); every
//! wait is bounded.
//!
//! What a failed frame does (node.rs `process_loop`): when detection fails the node publishes
//! nothing for it; when matching fails, its keypoints are already out (the node publishes
//! keypoints before it matches, for latency) and no matches are published. Either way the frame
//! is counted in `frames_failed`, the next diagnostics status is ERROR with the reason naming
//! the frame, and the failed frame does not become the previous frame: the next frame is matched
//! against the last frame published whole (after a failed `open`, against nothing, as after any
//! backend (re)open). A backend that panics is treated as a
//! failed frame too; the processor is then dropped and reopened for the next frame, which is
//! matched against nothing.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::faulty::{DETECT_FAULT, Faults, FaultyFactory, MATCH_FAULT, OPEN_FAULT, PANIC_FAULT};
use common::*;
use ros2_client::Subscription;
use ros2_client::builtin_interfaces::Time;
use surfcl_core::GrayImage;
use surfcl_ros::msg::{
    DiagnosticArray, DiagnosticStatus, Header, Image, KeypointArray, MatchArray,
};
use surfcl_ros::node::RunningNode;
use surfcl_ros::processor::Detection;

const LIMIT: Duration = Duration::from_secs(60);
/// Frames this wide are the ones the faulty backend fails on.
const FAULT_WIDTH: usize = 201;

fn boat(n: u32) -> Gray {
    half(&read_pgm(&data(&format!("oxford-boat/img{n}.pgm"))))
}

/// The `w x h` window of `g` at (`x`, `y`).
fn crop(g: &Gray, x: usize, y: usize, w: usize, h: usize) -> Gray {
    assert!(x + w <= g.width && y + h <= g.height);
    Gray {
        width: w,
        height: h,
        pixels: (0..h)
            .flat_map(|j| g.pixels[(y + j) * g.width + x..][..w].iter().copied())
            .collect(),
    }
}

/// Frame A, the failing frame (FAULT_WIDTH wide) and frame B (A shifted by a few pixels, so
/// that B matches A well).
fn frames() -> (Gray, Gray, Gray) {
    let b1 = boat(1);
    (
        crop(&b1, 40, 40, 200, 150),
        crop(&b1, 60, 50, FAULT_WIDTH, 150),
        crop(&b1, 46, 44, 200, 150),
    )
}

fn detect_direct(g: &Gray) -> Detection {
    let params = test_params();
    factory()
        .open(&params)
        .unwrap()
        .detect(
            &GrayImage::new(&g.pixels, g.width, g.height).unwrap(),
            &params,
        )
        .unwrap()
}

fn match_direct(query: &Detection, train: &Detection) -> Vec<surfcl_ros::msg::MatchMsg> {
    let params = test_params();
    factory()
        .open(&params)
        .unwrap()
        .match_frames(&mut query.clone(), &mut train.clone(), &params)
        .unwrap()
}

/// Publishes `img` (once a second, best effort) until the node counts a failed frame.
fn send_until_failed(client: &Client, node: &RunningNode, img: &Image) {
    let failed_before = node.stats().failed;
    let deadline = Instant::now() + LIMIT;
    while node.stats().failed == failed_before {
        assert!(
            Instant::now() < deadline,
            "the frame never failed: {:?}",
            node.stats()
        );
        client.images.publish(img.clone()).unwrap();
        let until = Instant::now() + Duration::from_secs(1);
        while node.stats().failed == failed_before && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// The first diagnostics status for which `pred` holds, within `limit`.
fn wait_status(
    diag: &Subscription<DiagnosticArray>,
    limit: Duration,
    pred: impl Fn(&DiagnosticStatus) -> bool,
) -> Option<DiagnosticStatus> {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        let left = deadline.saturating_duration_since(Instant::now());
        match within(left, diag.async_take()) {
            Some(Ok((arr, _))) => {
                if let Some(s) = arr.status.into_iter().find(|s| pred(s)) {
                    return Some(s);
                }
            }
            Some(Err(_)) => {}
            None => break,
        }
    }
    None
}

fn value<'a>(s: &'a DiagnosticStatus, key: &str) -> &'a str {
    s.values
        .iter()
        .find(|kv| kv.key == key)
        .map(|kv| kv.value.as_str())
        .unwrap_or_else(|| panic!("no {key} in {s:?}"))
}

/// Takes what is left on the output topics (for `wait`), recording the stamps in `client.seen`.
fn drain(client: &Client, wait: Duration) {
    let never = Time::new(999_999, 0);
    take_stamped_seen(
        &client.keypoints,
        never,
        wait,
        |k| k.header.stamp,
        |t| client.seen.borrow_mut().push(("keypoints", t)),
    );
    take_stamped_seen(
        &client.matches,
        never,
        wait,
        |m| m.header.stamp,
        |t| client.seen.borrow_mut().push(("matches", t)),
    );
}

/// Polls (bounded) until the node has processed `n` frames.
fn wait_processed(node: &RunningNode, n: u64) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while node.stats().processed < n && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[derive(PartialEq)]
enum Fault {
    Detect,
    Match,
    Panic,
}

/// Frame A is published, then the failing frame F, then B. Checks: ERROR diagnostics naming F
/// and the reason; no matches for F (and no keypoints unless matching was what failed); B
/// published as the backend gives it, matched
/// against A (the last published frame); the node keeps going and reports OK again.
fn fault_on_one_frame(domain: u16, fault: Fault) {
    let faults = Arc::new(match fault {
        Fault::Detect => Faults {
            detect_width: Some(FAULT_WIDTH),
            ..Faults::default()
        },
        Fault::Match => Faults {
            match_width: Some(FAULT_WIDTH),
            ..Faults::default()
        },
        Fault::Panic => Faults {
            panic_width: Some(FAULT_WIDTH),
            ..Faults::default()
        },
    });
    let (what, reason) = match fault {
        Fault::Detect => ("detection failed", DETECT_FAULT),
        Fault::Match => ("matching failed", MATCH_FAULT),
        Fault::Panic => ("backend panicked", PANIC_FAULT),
    };
    let (node, client, diag) = faulty_node(domain, &faults);

    let (a, f, b) = frames();
    let (da, db) = (detect_direct(&a), detect_direct(&b));
    let dm = match_direct(&db, &da);
    assert!(!dm.is_empty(), "B should match A");

    let (kp_a, m_a) = client.process(&mono8(&a, header(1, "frame-a")), LIMIT);
    assert_keypoints_equal(&kp_a, &da, "kp_a");
    assert!(m_a.matches.is_empty());

    let f_msg = mono8(&f, header(2, "frame-f"));
    send_until_failed(&client, &node, &f_msg);
    let err = wait_status(&diag, Duration::from_secs(10), |s| {
        s.level == DiagnosticStatus::ERROR
    })
    .expect("no ERROR diagnostics after the failed frame");
    for part in ["frame-f", what, reason] {
        assert!(err.message.contains(part), "{part:?} not in {err:?}");
        assert!(value(&err, "last_error").contains(part), "{err:?}");
    }
    assert_eq!(err.name, "/surfcl_node: processing");
    assert!(!node.is_finished(), "the processing thread ended");

    let (kp_b, m_b) = client.process(&mono8(&b, header(3, "frame-b")), LIMIT);
    assert_keypoints_equal(&kp_b, &db, "kp_b");
    if fault == Fault::Panic {
        // The backend was reopened: B starts a new sequence; the next frame is matched to B.
        assert!(m_b.matches.is_empty());
        assert_eq!(m_b.previous_header, Header::default());
        let (kp_c, m_c) = client.process(&mono8(&a, header(4, "frame-c")), LIMIT);
        assert_keypoints_equal(&kp_c, &da, "kp_c");
        assert_eq!(m_c.previous_header, header(3, "frame-b"));
        assert_eq!(m_c.matches, match_direct(&da, &db));
        assert!(!m_c.matches.is_empty());
    } else {
        assert_eq!(
            m_b.previous_header,
            header(1, "frame-a"),
            "B is matched against A, the last published frame"
        );
        assert_eq!(m_b.matches, dm);
    }

    // No match list, not even an empty one, was published for F; its keypoints only when
    // matching was what failed (they were published before matching).
    drain(&client, Duration::from_millis(1500));
    let seen = client.seen.borrow().clone();
    assert!(
        !seen.contains(&("matches", f_msg.header.stamp)),
        "matches published for the failed frame: {seen:?}"
    );
    assert_eq!(
        seen.contains(&("keypoints", f_msg.header.stamp)),
        fault == Fault::Match,
        "keypoints of the failed frame: published only when matching failed: {seen:?}"
    );
    assert!(seen.contains(&("keypoints", header(3, "").stamp)));

    wait_processed(&node, 2);
    let s = node.stats();
    assert!(s.failed >= 1 && s.processed >= 2, "{s:?}");
    assert!(s.last_error.contains(reason), "{s:?}");
    // Back to OK once a second passes without failures.
    let ok = wait_status(&diag, Duration::from_secs(15), |s| {
        s.level == DiagnosticStatus::OK
    })
    .expect("diagnostics never went back to OK");
    assert!(value(&ok, "frames_processed").parse::<u64>().unwrap() >= 2);
    let reopens = usize::from(fault == Fault::Panic);
    assert!(!node.is_finished(), "the processing thread ended");
    assert_eq!(faults.opens.load(Ordering::SeqCst), 1 + reopens);
    node.stop();
}

#[test]
fn detection_failure_reports_error_publishes_nothing_and_continues() {
    fault_on_one_frame(141, Fault::Detect);
}

#[test]
fn matching_failure_reports_error_publishes_no_matches_and_continues() {
    fault_on_one_frame(142, Fault::Match);
}

/// A node on `domain` whose backend fails as `faults` says, and a connected client with the
/// node's `/diagnostics`.
fn faulty_node(
    domain: u16,
    faults: &Arc<Faults>,
) -> (RunningNode, Client, Subscription<DiagnosticArray>) {
    let node = start_node(
        domain,
        Arc::new(FaultyFactory {
            inner: factory(),
            faults: Arc::clone(faults),
        }),
        |c| c.params = test_params(),
    );
    let mut client = Client::new(domain, "/", "/image");
    let diag = client.diagnostics("/diagnostics");
    client.wait_connected(LIMIT);
    within(LIMIT, diag.wait_for_publisher(&client.node)).expect("diagnostics not discovered");
    (node, client, diag)
}

#[test]
fn backend_panic_reports_error_publishes_nothing_and_reopens() {
    fault_on_one_frame(145, Fault::Panic);
}

/// The backend cannot be opened for the first frame: that frame fails (ERROR, nothing
/// published), the next frame opens it again and is processed; it has nothing to match against
/// (the previous frame is reset whenever the backend is opened); the one after is matched.
#[test]
fn open_failure_drops_the_frame_and_the_next_frame_reopens() {
    let domain = 143;
    let faults = Arc::new(Faults {
        open_failures: AtomicUsize::new(1),
        ..Faults::default()
    });
    let (node, client, diag) = faulty_node(domain, &faults);

    let (a, _, b) = frames();
    let (da, db) = (detect_direct(&a), detect_direct(&b));
    let dm = match_direct(&db, &da);

    let first = mono8(&a, header(1, "frame-0"));
    send_until_failed(&client, &node, &first);
    let err = wait_status(&diag, Duration::from_secs(10), |s| {
        s.level == DiagnosticStatus::ERROR
    })
    .expect("no ERROR diagnostics after the failed open");
    for part in ["frame-0", "cannot open backend", OPEN_FAULT] {
        assert!(err.message.contains(part), "{part:?} not in {err:?}");
    }

    let (kp_a, m_a) = client.process(&mono8(&a, header(2, "frame-a")), LIMIT);
    assert_keypoints_equal(&kp_a, &da, "kp_a");
    assert!(m_a.matches.is_empty());
    assert_eq!(m_a.previous_header, Header::default());
    let (kp_b, m_b) = client.process(&mono8(&b, header(3, "frame-b")), LIMIT);
    assert_keypoints_equal(&kp_b, &db, "kp_b");
    assert_eq!(m_b.previous_header, header(2, "frame-a"));
    assert_eq!(m_b.matches, dm);

    drain(&client, Duration::from_millis(1500));
    let seen = client.seen.borrow().clone();
    assert!(
        !seen.iter().any(|(_, t)| *t == first.header.stamp),
        "output published for the frame whose open failed: {seen:?}"
    );
    assert_eq!(
        faults.opens.load(Ordering::SeqCst),
        2,
        "one failed open, then one that is kept"
    );
    wait_processed(&node, 2);
    let s = node.stats();
    assert_eq!(s.failed, 1, "{s:?}");
    assert!(s.processed >= 2 && s.backend.starts_with("faulty"), "{s:?}");
    node.stop();
}

/// One side of the two-node test: its own client, frames `order` of `frames`, stamps 1, 2, ...
/// Returns the outputs and when it started and ended feeding.
fn feed(
    domain: u16,
    ns: &str,
    frames: &[Gray],
    order: &[usize],
    ready: &AtomicUsize,
) -> (Vec<(KeypointArray, MatchArray)>, Instant, Instant) {
    let client = Client::new(domain, ns, &format!("{ns}/image"));
    client.wait_connected(LIMIT);
    // A bounded barrier: both sides start feeding together (a panicking side cannot hang the
    // other past the deadline).
    ready.fetch_add(1, Ordering::SeqCst);
    let deadline = Instant::now() + LIMIT;
    while ready.load(Ordering::SeqCst) < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    let start = Instant::now();
    let out = order
        .iter()
        .enumerate()
        .map(|(i, &f)| client.process(&mono8(&frames[f], header(i as i32 + 1, ns)), LIMIT))
        .collect();
    (out, start, Instant::now())
}

/// Two nodes in one process (same domain, namespaces /left and /right), fed concurrently from
/// two threads in opposite orders: each publishes exactly what the backend gives directly, so
/// no state is shared between the nodes.
#[test]
fn two_nodes_in_one_process_give_direct_backend_results() {
    let domain = 144;
    let start = |ns: &str, name: &str| {
        start_node(domain, factory(), |c| {
            c.params = test_params();
            c.namespace = ns.into();
            c.node_name = name.into();
        })
    };
    let (left, right) = (start("/left", "feat_left"), start("/right", "feat_right"));
    assert_eq!(left.fully_qualified_name(), "/left/feat_left");
    assert_eq!(right.fully_qualified_name(), "/right/feat_right");

    let frames: Vec<Gray> = (1..=3).map(boat).collect();
    let direct: Vec<Detection> = frames.iter().map(detect_direct).collect();
    let orders: [(&str, [usize; 3]); 2] = [("/left", [0, 1, 2]), ("/right", [2, 1, 0])];
    let ready = AtomicUsize::new(0);
    let results = std::thread::scope(|s| {
        let handles: Vec<_> = orders
            .iter()
            .map(|(ns, order)| {
                let (frames, ready) = (&frames, &ready);
                s.spawn(move || feed(domain, ns, frames, order, ready))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a feeding thread panicked"))
            .collect::<Vec<_>>()
    });

    let ((_, l0, l1), (_, r0, r1)) = (&results[0], &results[1]);
    assert!(l0 < r1 && r0 < l1, "the two sides did not overlap");
    for ((ns, order), (out, _, _)) in orders.iter().zip(&results) {
        for (i, (kp, m)) in out.iter().enumerate() {
            let stamp = i as i32 + 1;
            assert_eq!(kp.header, header(stamp, ns));
            assert_keypoints_equal(kp, &direct[order[i]], &format!("{ns} frame {stamp}"));
            assert_eq!(m.header, header(stamp, ns));
            if i == 0 {
                assert!(m.matches.is_empty());
            } else {
                assert_eq!(m.previous_header, header(stamp - 1, ns));
                let expect = match_direct(&direct[order[i]], &direct[order[i - 1]]);
                assert!(!expect.is_empty());
                assert_eq!(m.matches, expect, "{ns} frame {i}");
            }
        }
    }
    for node in [&left, &right] {
        wait_processed(node, 3);
        let s = node.stats();
        assert_eq!((s.failed, s.malformed), (0, 0), "{s:?}");
        assert!(s.processed >= 3, "{s:?}");
    }
    left.stop();
    right.stop();
}
