//! The `debug_image` picture: the frame in gray (as rgb8) with its keypoints, a yellow line
//! from each matched keypoint to where its match was in the previous frame, and a legend. The
//! drawing is `surfcl-draw`'s, the same as the CLI's `detect --draw` picture: its crate docs
//! give the colours (dark blobs blue, bright blobs red, Harris corners green) and the legend.

use surfcl_core::Keypoint;
use surfcl_draw::{Canvas, draw_keypoint_picture, gray_into_rgb};

use crate::msg::MatchMsg;

/// Renders the debug picture of a `width x height` gray frame into `out` (resized to
/// `width * height * 3`, its allocation reused). `matches` index `keypoints` (query) and
/// `previous` (train); a match whose indices are out of range is not drawn.
pub fn render(
    gray: &[u8],
    width: usize,
    height: usize,
    keypoints: &[Keypoint],
    previous: &[Keypoint],
    matches: &[MatchMsg],
    out: &mut Vec<u8>,
) {
    gray_into_rgb(gray, out);
    let tracks = matches.iter().filter_map(|m| {
        let q = keypoints.get(m.query as usize)?;
        let t = previous.get(m.train as usize)?;
        Some(((q.x, q.y), (t.x, t.y)))
    });
    draw_keypoint_picture(&mut Canvas::new(out, width, height), keypoints, tracks);
}

#[cfg(test)]
mod tests {
    use super::*;
    use surfcl_draw::{BLUE, YELLOW};

    #[test]
    fn draws_inside_and_clips_outside() {
        let gray = vec![10u8; 20 * 10];
        let kp = Keypoint {
            x: 5.0,
            y: 5.0,
            scale: 1.0,
            laplacian: 1,
            ..Default::default()
        };
        let far = Keypoint {
            x: 1e9,
            y: -1e9,
            ..kp
        };
        let m = [MatchMsg {
            query: 0,
            train: 0,
            distance: 0.1,
        }];
        let mut out = Vec::new();
        render(&gray, 20, 10, &[kp], &[far], &m, &mut out);
        assert_eq!(out.len(), 600);
        // The circle of radius 2 around (5, 5) passes through (7, 5): a dark blob, blue.
        assert_eq!(&out[(5 * 20 + 7) * 3..][..3], &BLUE.0);
        // A pixel far from everything is the gray value.
        assert_eq!(&out[(9 * 20 + 19) * 3..][..3], &[10, 10, 10]);
        // The match line starts at the keypoint and is yellow somewhere near it.
        assert!(out.chunks(3).any(|p| p == YELLOW.0));
    }

    /// The one-module promise: the node's debug_image and the CLI's `detect --draw` picture
    /// are the same pixels for the same keypoints on the same image.
    #[test]
    fn debug_image_is_the_cli_picture() {
        // Large enough for the legend (bottom left), which is compared too.
        let (width, height) = (480usize, 270usize);
        let gray: Vec<u8> = (0..width * height)
            .map(|i| ((i % width) * 255 / width) as u8 ^ ((i / width) as u8 & 0x30))
            .collect();
        let keypoints: Vec<Keypoint> = (0..60)
            .map(|k| Keypoint {
                x: (k * 37 % width) as f32 + 0.3,
                y: (k * 53 % height) as f32 - 0.4,
                scale: 1.2 + (k % 7) as f32,
                orientation: k as f32 * 0.7,
                laplacian: [-1, 1, 0][k % 3],
                ..Default::default()
            })
            .collect();
        let mut node = Vec::new();
        render(&gray, width, height, &keypoints, &[], &[], &mut node);
        let cli = surfcl_cli::draw::keypoint_picture(
            &surfcl_cli::io::OwnedGray {
                width,
                height,
                pixels: gray.clone(),
            },
            &keypoints,
        );
        assert_eq!(cli.dimensions(), (width as u32, height as u32));
        let differing = node
            .iter()
            .zip(cli.as_raw())
            .filter(|(a, b)| a != b)
            .count();
        assert_eq!(node.len(), cli.as_raw().len());
        assert_eq!(differing, 0, "bytes that differ");
        // Something was drawn: neither is the plain gray frame.
        let plain: Vec<u8> = gray.iter().flat_map(|&g| [g, g, g]).collect();
        assert_ne!(node, plain);
        let corner = (height - 1) * width * 3;
        assert_eq!(node[corner], gray[(height - 1) * width] / 4, "legend band");
    }
}
