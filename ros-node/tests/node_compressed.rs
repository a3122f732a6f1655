//! image_transport's `compressed` transport through the node: JPEG and PNG frames of a boat
//! picture published as `sensor_msgs/CompressedImage` on `/image/compressed` give the keypoints
//! and descriptors of the CPU backend's detection on the decoded picture's luminance (decoded
//! here with the `image` crate and reduced by the command line's rules, so what `surfcl detect`
//! sees in the same file); corrupt files and unknown format strings are dropped, counted, and
//! logged once per kind. Each test has its own ROS domain id; every wait is bounded.
#![cfg(feature = "backend")]

mod common;
mod rosout;

use std::io::Cursor;
use std::time::{Duration, Instant};

use common::*;
use image::{DynamicImage, ImageFormat, RgbImage};
use ros2_client::qos::History;
use ros2_client::{Name, Publisher, QosProfile};
use surfcl_core::GrayImage;
use surfcl_ros::compressed::{CompressedImage, ImageTransport, compressed_image_type};
use surfcl_ros::convert::luminance;
use surfcl_ros::msg::Header;

use rosout::Rosout;

const LIMIT: Duration = Duration::from_secs(60);

/// The boat at half size (425 x 340) as a colour picture whose channels differ.
fn boat_colour() -> RgbImage {
    let g = half(&read_pgm(&data("oxford-boat/img1.pgm")));
    RgbImage::from_fn(g.width as u32, g.height as u32, |x, y| {
        let p = g.pixels[y as usize * g.width + x as usize];
        image::Rgb([p, p / 2 + 60, 255 - p])
    })
}

/// The luminance of a decoded file by the command line's rules: gray as it is, colour by the
/// BT.601 weights of the decoded 8-bit R, G, B.
fn decoded_luminance(bytes: &[u8]) -> Gray {
    let decoded = image::load_from_memory(bytes).unwrap();
    let (width, height) = (decoded.width() as usize, decoded.height() as usize);
    let pixels = match decoded {
        DynamicImage::ImageLuma8(g) => g.into_raw(),
        colour => colour
            .to_rgb8()
            .pixels()
            .map(|p| luminance(p[0], p[1], p[2]))
            .collect(),
    };
    Gray {
        width,
        height,
        pixels,
    }
}

fn encode(image: DynamicImage, format: ImageFormat) -> Vec<u8> {
    let mut bytes = Vec::new();
    image
        .write_to(&mut Cursor::new(&mut bytes), format)
        .unwrap();
    bytes
}

/// A publisher of compressed images on the client's participant.
fn compressed_publisher(client: &mut Client, topic: &str) -> Publisher<CompressedImage> {
    let qos = QosProfile::publisher_default().history(History::KeepLast { depth: 10 });
    let t = client
        .node
        .create_topic(&Name::parse(topic).unwrap(), compressed_image_type(), &qos)
        .unwrap();
    client.node.create_publisher(&t, None).unwrap()
}

/// Publishes `msg` (every 1.5 s) until the node's keypoints with its stamp arrive.
fn process(
    client: &Client,
    publisher: &Publisher<CompressedImage>,
    msg: &CompressedImage,
) -> surfcl_ros::msg::KeypointArray {
    let deadline = Instant::now() + LIMIT;
    while Instant::now() < deadline {
        publisher.publish(msg.clone()).unwrap();
        if let Some(kp) = take_stamped(
            &client.keypoints,
            msg.header.stamp,
            Duration::from_millis(1500),
            |k| k.header.stamp,
        ) {
            return kp;
        }
    }
    panic!("no keypoints for frame {:?}", msg.header);
}

fn start(
    domain: u16,
) -> (
    surfcl_ros::node::RunningNode,
    Client,
    Publisher<CompressedImage>,
) {
    let node = start_node(domain, factory(), |c| {
        c.params = test_params();
        c.image_transport = ImageTransport::Compressed;
    });
    let mut client = Client::new(domain, "/", "/image");
    let publisher = compressed_publisher(&mut client, "/image/compressed");
    within(LIMIT, publisher.wait_for_subscription(&client.node))
        .expect("the node's /image/compressed subscription not discovered");
    (node, client, publisher)
}

#[test]
fn jpeg_and_png_frames_give_the_detection_of_the_decoded_picture() {
    let (node, client, publisher) = start(131);
    let colour = boat_colour();
    let gray = DynamicImage::ImageRgb8(colour.clone()).to_luma8();
    let frames = [
        (
            "bgr8; jpeg compressed bgr8",
            encode(DynamicImage::ImageRgb8(colour.clone()), ImageFormat::Jpeg),
        ),
        (
            "rgb8; png compressed bgr8",
            encode(DynamicImage::ImageRgb8(colour), ImageFormat::Png),
        ),
        (
            "mono8; jpeg compressed mono8",
            encode(DynamicImage::ImageLuma8(gray.clone()), ImageFormat::Jpeg),
        ),
        (
            "png",
            encode(DynamicImage::ImageLuma8(gray), ImageFormat::Png),
        ),
    ];
    let params = test_params();
    let mut direct = factory().open(&params).unwrap();
    for (i, (format, bytes)) in frames.into_iter().enumerate() {
        let decoded = decoded_luminance(&bytes);
        assert_eq!((decoded.width, decoded.height), (425, 340));
        let want = direct
            .detect(
                &GrayImage::new(&decoded.pixels, decoded.width, decoded.height).unwrap(),
                &params,
            )
            .unwrap();
        assert!(want.keypoints.len() > 50, "{format}");
        let msg = CompressedImage {
            header: header(i as i32 + 1, "cam"),
            format: format.into(),
            data: bytes,
        };
        let kp = process(&client, &publisher, &msg);
        assert_keypoints_equal(&kp, &want, format);
    }
    assert_eq!(node.stats().malformed, 0);
    node.stop();
}

#[test]
fn corrupt_files_and_unknown_formats_are_dropped_counted_and_logged_once_per_kind() {
    let domain = 132;
    let rosout = Rosout::new(domain);
    let (node, client, publisher) = start(domain);
    let colour = boat_colour();
    let jpeg = encode(DynamicImage::ImageRgb8(colour.clone()), ImageFormat::Jpeg);
    let png = encode(DynamicImage::ImageRgb8(colour), ImageFormat::Png);
    let bad = |format: &str, data: Vec<u8>| CompressedImage {
        header: header(10, "bad"),
        format: format.into(),
        data,
    };
    // Each bad frame and its kind; the two truncated JPEGs are one kind.
    let frames = [
        bad(
            "bgr8; jpeg compressed bgr8",
            jpeg[..jpeg.len() / 3].to_vec(),
        ),
        bad("jpeg", jpeg[..jpeg.len() / 2].to_vec()),
        bad("bgr8; png compressed bgr8", png[..png.len() - 40].to_vec()),
        bad("bgr8; webp compressed bgr8", png.clone()),
        bad("16UC1; compressedDepth png", png.clone()),
        bad("png", Vec::new()),
    ];
    let kinds = 4; // decode JPEG, decode PNG, format, empty PNG
    let deadline = Instant::now() + LIMIT;
    let mut rounds = 0;
    while rounds < 3 || node.stats().malformed < 3 * frames.len() as u64 {
        assert!(Instant::now() < deadline, "{:?}", node.stats());
        for f in &frames {
            publisher.publish(f.clone()).unwrap();
            std::thread::sleep(Duration::from_millis(20));
        }
        rounds += 1;
        std::thread::sleep(Duration::from_millis(200));
    }
    let good = CompressedImage {
        header: header(50, "cam"),
        format: "bgr8; png compressed bgr8".into(),
        data: png,
    };
    let kp = process(&client, &publisher, &good);
    assert!(!kp.keypoints.is_empty());
    let logged = rosout.wait_for("dropping compressed image", kinds, Duration::from_secs(10));
    assert_eq!(logged.len(), kinds, "one line per kind: {logged:#?}");
    for needle in [
        "cannot decode Jpeg",
        "cannot decode Png",
        "unsupported compressed format",
        "Png image with no data",
    ] {
        assert!(
            logged.iter().any(|l| l.contains(needle)),
            "{needle:?} not in {logged:#?}"
        );
    }
    assert!(node.stats().malformed >= 3 * frames.len() as u64);
    node.stop();
}

#[test]
fn the_header_of_a_compressed_frame_is_the_outputs_header() {
    let (node, client, publisher) = start(133);
    let msg = CompressedImage {
        header: Header {
            stamp: ros2_client::builtin_interfaces::Time::new(77, 5),
            frame_id: "camera_optical".into(),
        },
        format: "jpeg".into(),
        data: encode(DynamicImage::ImageRgb8(boat_colour()), ImageFormat::Jpeg),
    };
    let kp = process(&client, &publisher, &msg);
    assert_eq!(kp.header, msg.header);
    node.stop();
}
