//! The camera encodings through the node: a boat picture sent as each encoding the node reads
//! (odd width, packed and padded rows) gives the keypoints and descriptors of the CPU backend's
//! detection on the luminance the encoding carries, computed here independently of the node's
//! conversion; malformed variants are dropped, counted, and logged once per kind. Each test has
//! its own ROS domain id; every wait is bounded.

mod common;
mod rosout;

use std::time::{Duration, Instant};

use common::*;
use surfcl_core::GrayImage;
use surfcl_ros::convert::{ENCODING_NAMES, luminance};
use surfcl_ros::msg::{Header, Image, KeypointArray, KeypointMsg};
use surfcl_ros::params::NodeParams;
use surfcl_ros::processor::{Detection, Processor};

use rosout::Rosout;

const LIMIT: Duration = Duration::from_secs(60);

/// The boat at half size: 425 x 340, an odd width.
fn boat() -> Gray {
    half(&read_pgm(&data("oxford-boat/img1.pgm")))
}

/// Pixel `p` of the gray picture as a colour whose channels differ (a swapped channel or a
/// wrong demosaicing changes the luminance).
fn colour(p: u8) -> [u8; 3] {
    [p, p / 2 + 60, 255 - p]
}

/// A chroma byte that varies over the picture (the node must not read it as luminance).
fn chroma(x: usize, y: usize) -> u8 {
    (x * 7 + y * 13) as u8 ^ 0x5a
}

/// Filter colour (0 red, 1 green, 2 blue) of a Bayer pattern ("rggb", ...) at (`x`, `y`).
fn filter(pattern: &str, x: usize, y: usize) -> usize {
    match pattern.as_bytes()[(y % 2) * 2 + x % 2] {
        b'r' => 0,
        b'g' => 1,
        _ => 2,
    }
}

/// Bilinear demosaicing of a Bayer mosaic (`w x h`, rows of `step` bytes) then the luminance
/// weights, written the long way: a pixel's own colour is its sample; each missing colour is
/// the rounded mean of the pixels of that colour among its 8 neighbours, mirrored at the border
/// without repeating the edge (ros-node/README.md states the rule).
fn demosaic(data: &[u8], pattern: &str, w: usize, h: usize, step: usize) -> Vec<u8> {
    let mirror = |i: i64, n: usize| {
        let n = n as i64;
        (if i < 0 {
            -i
        } else if i >= n {
            2 * n - 2 - i
        } else {
            i
        }) as usize
    };
    let sample = |x: i64, y: i64| u32::from(data[mirror(y, h) * step + mirror(x, w)]);
    let colour_at =
        |x: i64, y: i64| filter(pattern, x.rem_euclid(2) as usize, y.rem_euclid(2) as usize);
    let mut out = Vec::with_capacity(w * h);
    for y in 0..h as i64 {
        for x in 0..w as i64 {
            let mut rgb = [0u8; 3];
            for (c, value) in rgb.iter_mut().enumerate() {
                if colour_at(x, y) == c {
                    *value = sample(x, y) as u8;
                    continue;
                }
                let (mut sum, mut n) = (0, 0);
                for dy in -1..=1 {
                    for dx in -1..=1 {
                        if (dx, dy) != (0, 0) && colour_at(x + dx, y + dy) == c {
                            sum += sample(x + dx, y + dy);
                            n += 1;
                        }
                    }
                }
                *value = ((sum + n / 2) / n) as u8;
            }
            out.push(luminance(rgb[0], rgb[1], rgb[2]));
        }
    }
    out
}

/// `g` as an `encoding` message whose rows are `padding` bytes longer than the pixels need
/// (padding bytes 0xee), and the luminance the message carries by the encoding's rule.
fn frame(g: &Gray, encoding: &str, padding: usize, header: Header) -> (Image, Vec<u8>) {
    let (w, h) = (g.width, g.height);
    let px = |x: usize, y: usize| g.pixels[y * w + x];
    let mut is_bigendian = 0;
    let (step, rows, want): (usize, Vec<Vec<u8>>, Vec<u8>) = match encoding {
        "yuv422_yuy2" | "yuyv" | "uyvy" | "yuv422" => {
            let y_first = encoding.starts_with("yuv422_") || encoding == "yuyv";
            let rows = (0..h)
                .map(|y| {
                    (0..w)
                        .flat_map(|x| {
                            // U for even pixels, V for odd ones: an odd width ends on a U.
                            let c = chroma(x, y);
                            if y_first {
                                [px(x, y), c]
                            } else {
                                [c, px(x, y)]
                            }
                        })
                        .collect()
                })
                .collect();
            (2 * w, rows, g.pixels.clone())
        }
        "nv12" | "nv21" => {
            let mut rows: Vec<Vec<u8>> =
                (0..h).map(|y| (0..w).map(|x| px(x, y)).collect()).collect();
            // The chroma plane: h / 2 rows of interleaved pairs, as wide as the Y rows.
            rows.extend((0..h / 2).map(|y| (0..w).map(|x| chroma(x, y)).collect()));
            (w, rows, g.pixels.clone())
        }
        "mono16" | "16UC1" => {
            // Each gray value g as a 16-bit sample within half a step of g * 257, so that it
            // rounds back to g: (v + 128) / 257.
            is_bigendian = u8::from(encoding == "16UC1");
            let rows = (0..h)
                .map(|y| {
                    (0..w)
                        .flat_map(|x| {
                            let noise = (x * 31 + y * 17) % 257;
                            let v = (i64::from(px(x, y)) * 257 + noise as i64 - 128)
                                .clamp(0, 65_535) as u16;
                            if is_bigendian == 1 {
                                v.to_be_bytes()
                            } else {
                                v.to_le_bytes()
                            }
                        })
                        .collect()
                })
                .collect();
            (2 * w, rows, g.pixels.clone())
        }
        "8UC3" | "8UC4" => {
            let alpha = encoding == "8UC4";
            let rows = (0..h)
                .map(|y| {
                    (0..w)
                        .flat_map(|x| {
                            let [r, gr, b] = colour(px(x, y));
                            let mut p = vec![b, gr, r];
                            if alpha {
                                p.push(7);
                            }
                            p
                        })
                        .collect()
                })
                .collect();
            let want = g
                .pixels
                .iter()
                .map(|&p| {
                    let [r, gr, b] = colour(p);
                    luminance(r, gr, b)
                })
                .collect();
            (w * if alpha { 4 } else { 3 }, rows, want)
        }
        bayer if bayer.starts_with("bayer_") => {
            let pattern = &bayer["bayer_".len()..bayer.len() - 1];
            let rows: Vec<Vec<u8>> = (0..h)
                .map(|y| {
                    (0..w)
                        .map(|x| colour(px(x, y))[filter(pattern, x, y)])
                        .collect()
                })
                .collect();
            let packed: Vec<u8> = rows.concat();
            let want = demosaic(&packed, pattern, w, h, w);
            (w, rows, want)
        }
        other => panic!("no test frame for {other}"),
    };
    let step = step + padding;
    let mut data = Vec::with_capacity(step * rows.len());
    for row in rows {
        assert!(row.len() <= step);
        data.extend_from_slice(&row);
        data.resize(data.len() + step - row.len(), 0xee);
    }
    let image = Image {
        header,
        height: h as u32,
        width: w as u32,
        encoding: encoding.into(),
        is_bigendian,
        step: step as u32,
        data,
    };
    (image, want)
}

/// The encodings of this test: every one the node reads but the plain gray and 8-bit RGB/BGR(A)
/// layouts (`node_pinned` sends those), that is the ones `frame` makes.
fn camera_encodings() -> impl Iterator<Item = &'static str> {
    ENCODING_NAMES
        .into_iter()
        .filter(|e| !matches!(*e, "mono8" | "8UC1" | "rgb8" | "bgr8" | "rgba8" | "bgra8"))
}

/// A node's client and a processor of the node's backend, to compare the node's keypoints of
/// a frame with the direct detection of its luminance.
struct NodeAndDirect<'a> {
    client: &'a Client,
    direct: &'a mut dyn Processor,
    params: &'a NodeParams,
    gray: &'a Gray,
}

impl NodeAndDirect<'_> {
    /// Sends the gray picture as `encoding` with `padding` bytes after each row (stamped
    /// `stamp`) through the node and detects its luminance directly: the node's keypoints, the
    /// direct detection and the case's name.
    fn send(
        &mut self,
        encoding: &str,
        padding: usize,
        stamp: i32,
    ) -> (KeypointArray, Detection, String) {
        let what = format!("{encoding}, {padding} bytes of padding");
        let g = self.gray;
        let (image, luma) = frame(g, encoding, padding, header(stamp, "cam"));
        let (kp, _) = self.client.process(&image, LIMIT);
        let want = self
            .direct
            .detect(
                &GrayImage::new(&luma, g.width, g.height).unwrap(),
                self.params,
            )
            .unwrap();
        (kp, want, what)
    }
}

#[test]
fn every_camera_encoding_gives_the_detection_of_its_luminance() {
    let domain = 121;
    let node = start_node(domain, factory(), |c| c.params = test_params());
    let client = Client::new(domain, "/", "/image");
    client.wait_connected(LIMIT);
    let g = boat();
    assert_eq!(g.width % 2, 1, "the boat at half size has an odd width");
    let params = test_params();
    let mut direct = factory().open(&params).unwrap();
    let mut both = NodeAndDirect {
        client: &client,
        direct: direct.as_mut(),
        params: &params,
        gray: &g,
    };
    let mut stamp = 0;
    for encoding in camera_encodings() {
        for padding in [0, 5] {
            stamp += 1;
            let (kp, want, what) = both.send(encoding, padding, stamp);
            assert!(want.keypoints.len() > 50, "{what}");
            assert_keypoints_equal(&kp, &want, &what);
        }
    }
    assert_eq!(node.stats().malformed, 0);
    node.stop();
}

/// On the OpenCL backend (PoCL will do; without a device the backend does not open and the test
/// fails) the camera encodings are converted on receipt into the backend's pinned input frames,
/// from the serialized message (NV12's Y plane copied as mono8 is), and give the OpenCL
/// detection of their luminance.
#[test]
fn on_opencl_camera_encodings_go_into_pinned_frames_on_receipt() {
    let domain = 123;
    let params = surfcl_ros::params::NodeParams {
        backend: surfcl_core::config::BackendChoice::OpenCl,
        ..surfcl_ros::params::NodeParams::default()
    };
    let node = start_node(domain, factory(), |c| c.params = params.clone());
    let client = Client::new(domain, "/", "/image");
    client.wait_connected(LIMIT);
    let g = resize_tile(&boat(), 241, 180);
    let mut direct = factory().open(&params).unwrap();
    let cases = [
        ("nv12", 0),
        ("nv21", 4),
        ("yuyv", 2),
        ("uyvy", 0),
        ("bayer_bggr8", 3),
        ("16UC1", 2),
        ("mono16", 0),
    ];
    // The first frame finds no input frame free (they are made after it): sent twice.
    let mut both = NodeAndDirect {
        client: &client,
        direct: direct.as_mut(),
        params: &params,
        gray: &g,
    };
    let mut stamp = 0;
    for (encoding, padding) in std::iter::once(cases[0]).chain(cases) {
        stamp += 1;
        let (kp, want, what) = both.send(encoding, padding, stamp);
        assert!(!want.keypoints.is_empty(), "{what}");
        assert_eq!(
            kp.keypoints,
            want.keypoints
                .iter()
                .map(KeypointMsg::from)
                .collect::<Vec<_>>(),
            "{what}"
        );
    }
    let stats = node.stats();
    assert_eq!(stats.malformed, 0);
    assert!(
        stats.received_into_frames >= cases.len() as u64,
        "frames converted into pinned memory on receipt: {stats:?}"
    );
    node.stop();
}

#[test]
fn bad_variants_are_dropped_counted_and_logged_once_per_kind() {
    let domain = 122;
    let rosout = Rosout::new(domain);
    let node = start_node(domain, factory(), |c| c.params = test_params());
    let client = Client::new(domain, "/", "/image");
    client.wait_connected(LIMIT);
    let g = resize_tile(&boat(), 161, 120);
    let (yuyv, _) = frame(&g, "yuyv", 0, header(10, "bad"));
    let (nv12, _) = frame(&g, "nv12", 0, header(10, "bad"));
    let (bayer, _) = frame(&g, "bayer_rggb8", 0, header(10, "bad"));
    let (mono16, _) = frame(&g, "mono16", 2, header(10, "bad"));
    let truncated_yuv = Image {
        data: yuyv.data[..yuyv.data.len() - 7].to_vec(),
        ..yuyv.clone()
    };
    // One byte per pixel where YUV 4:2:2 has two.
    let wrong_step = Image {
        step: 161,
        data: yuyv.data[..161 * 120].to_vec(),
        ..yuyv.clone()
    };
    let odd_height_nv12 = Image {
        height: 119,
        data: nv12.data[..161 * 119 * 3 / 2].to_vec(),
        ..nv12.clone()
    };
    let nv12_without_chroma = Image {
        data: nv12.data[..161 * 120].to_vec(),
        ..nv12
    };
    let one_column_bayer = Image {
        width: 1,
        step: 1,
        data: bayer.data[..120].to_vec(),
        ..bayer
    };
    let mono16_short_step = Image {
        step: 2 * 161 - 1,
        data: mono16.data[..(2 * 161 - 1) * 120].to_vec(),
        ..mono16
    };
    // Each bad variant and the kind (reason, encoding) it is logged as.
    let bad = [
        (truncated_yuv, "data length"),
        (wrong_step, "step"),
        (odd_height_nv12, "shape"),
        (nv12_without_chroma, "data length"),
        (one_column_bayer, "shape"),
        (mono16_short_step, "step"),
    ];
    let kinds = bad.len();
    for (image, reason) in &bad {
        let err = surfcl_ros::convert::validate(image).unwrap_err();
        assert_eq!(err.kind().reason, *reason, "{image:?}");
    }
    // Every variant three times (resent until the node has seen all of them).
    let deadline = Instant::now() + LIMIT;
    let mut rounds = 0;
    while rounds < 3 || node.stats().malformed < 3 * kinds as u64 {
        assert!(Instant::now() < deadline, "{:?}", node.stats());
        for (image, _) in &bad {
            client.images.publish(image.clone()).unwrap();
            std::thread::sleep(Duration::from_millis(20));
        }
        rounds += 1;
        std::thread::sleep(Duration::from_millis(200));
    }
    // A good frame after them is processed as the first frame.
    let (good, _) = frame(&g, "yuyv", 3, header(50, "cam"));
    let (kp, m) = client.process(&good, LIMIT);
    assert!(!kp.keypoints.is_empty());
    assert!(
        m.matches.is_empty(),
        "malformed frames are no previous frame"
    );
    let stats = node.stats();
    assert!(stats.malformed >= 3 * kinds as u64, "{stats:?}");
    // Records are delivered in the background.
    let logged = rosout.wait_for("dropping image", kinds, Duration::from_secs(10));
    assert_eq!(logged.len(), kinds, "one line per kind: {logged:#?}");
    for (image, _) in &bad {
        let err = surfcl_ros::convert::validate(image)
            .unwrap_err()
            .to_string();
        assert!(
            logged.iter().any(|line| line.contains(&err)),
            "{err} not in {logged:#?}"
        );
    }
    node.stop();
}
