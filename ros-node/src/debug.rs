//! The `debug_image` picture: the frame in gray (as rgb8) with keypoints drawn as circles
//! (green: dark blobs, red: bright blobs, blue: Harris) and a yellow line from each matched
//! keypoint to where its match was in the previous frame.

use surfcl_core::Keypoint;

use crate::msg::MatchMsg;

/// An rgb8 picture under construction.
struct Canvas<'a> {
    rgb: &'a mut [u8],
    width: i64,
    height: i64,
}

impl Canvas<'_> {
    fn put(&mut self, x: i64, y: i64, c: [u8; 3]) {
        if x >= 0 && y >= 0 && x < self.width && y < self.height {
            // In range by the test above; the index fits in usize (the image exists).
            let i = ((y * self.width + x) * 3) as usize;
            if let Some(px) = self.rgb.get_mut(i..i + 3) {
                px.copy_from_slice(&c);
            }
        }
    }

    fn line(&mut self, (x0, y0): (i64, i64), (x1, y1): (i64, i64), c: [u8; 3]) {
        // Bresenham; the number of steps is bounded by the longer side, clamped so that absurd
        // coordinates cannot make this loop long.
        let (dx, dy) = ((x1 - x0).abs(), -(y1 - y0).abs());
        let (sx, sy) = (if x0 < x1 { 1 } else { -1 }, if y0 < y1 { 1 } else { -1 });
        let (mut x, mut y, mut err) = (x0, y0, dx + dy);
        for _ in 0..=(dx.max(-dy).min(4 * (self.width + self.height))) {
            self.put(x, y, c);
            if x == x1 && y == y1 {
                break;
            }
            let e2 = 2 * err;
            if e2 >= dy {
                err += dy;
                x += sx;
            }
            if e2 <= dx {
                err += dx;
                y += sy;
            }
        }
    }

    fn circle(&mut self, (cx, cy): (i64, i64), r: i64, c: [u8; 3]) {
        let r = r.clamp(1, 64);
        let steps = 8 * r;
        for k in 0..steps {
            let a = (k as f32) * core::f32::consts::TAU / (steps as f32);
            let x = cx + (r as f32 * a.cos()).round() as i64;
            let y = cy + (r as f32 * a.sin()).round() as i64;
            self.put(x, y, c);
        }
    }
}

fn px(v: f32) -> i64 {
    if v.is_finite() { v.round() as i64 } else { -1 }
}

/// Renders the debug picture of a `width x height` gray frame into `out` (resized to
/// `width * height * 3`). `matches` index `keypoints` (query) and `previous` (train).
pub fn render(
    gray: &[u8],
    width: usize,
    height: usize,
    keypoints: &[Keypoint],
    previous: &[Keypoint],
    matches: &[MatchMsg],
    out: &mut Vec<u8>,
) {
    out.clear();
    out.extend(gray.iter().flat_map(|&g| [g, g, g]));
    let mut canvas = Canvas {
        rgb: out,
        width: width as i64,
        height: height as i64,
    };
    for m in matches {
        if let (Some(q), Some(t)) = (
            keypoints.get(m.query as usize),
            previous.get(m.train as usize),
        ) {
            canvas.line((px(q.x), px(q.y)), (px(t.x), px(t.y)), [255, 255, 0]);
        }
    }
    for k in keypoints {
        let colour = match k.laplacian {
            1 => [0, 255, 0],
            -1 => [255, 0, 0],
            _ => [0, 128, 255],
        };
        canvas.circle((px(k.x), px(k.y)), px(k.scale * 2.0), colour);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        // The circle of radius 2 around (5, 5) passes through (7, 5): green.
        assert_eq!(&out[(5 * 20 + 7) * 3..][..3], &[0, 255, 0]);
        // A pixel far from everything is the gray value.
        assert_eq!(&out[(9 * 20 + 19) * 3..][..3], &[10, 10, 10]);
        // The match line starts at the keypoint and is yellow somewhere near it.
        assert!(out.chunks(3).any(|p| p == [255, 255, 0]));
    }
}
