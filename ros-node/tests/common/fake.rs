//! A stand-in processor for the node tests when the `backend` feature is off: deterministic,
//! cheap, and with real structure (block maxima described by their normalised neighbourhood), so
//! that a wrong image, a wrong conversion or a wrong parameter shows in the output.

use surfcl_core::{Descriptor, GrayImage, Keypoint};
use surfcl_ros::msg::MatchMsg;
use surfcl_ros::params::NodeParams;
use surfcl_ros::processor::{Detection, Processor, ProcessorError, ProcessorFactory};

pub struct FakeFactory;

impl ProcessorFactory for FakeFactory {
    fn check(&self, _params: &NodeParams) -> Result<(), ProcessorError> {
        Ok(())
    }
    fn open(&self, params: &NodeParams) -> Result<Box<dyn Processor>, ProcessorError> {
        if params.device == "missing" {
            return Err("no device matches \"missing\"".into());
        }
        Ok(Box::new(FakeProcessor))
    }
}

pub struct FakeProcessor;

impl Processor for FakeProcessor {
    fn describe(&self) -> String {
        "fake".into()
    }
    fn detect(
        &mut self,
        image: &GrayImage<'_>,
        params: &NodeParams,
    ) -> Result<Detection, ProcessorError> {
        let (w, h, px) = (image.width(), image.height(), image.pixels());
        let mut kps = Vec::new();
        for by in (4..h.saturating_sub(12)).step_by(16) {
            for bx in (4..w.saturating_sub(12)).step_by(16) {
                let mut best = (0u8, 0, 0);
                for y in by..by + 8 {
                    for x in bx..bx + 8 {
                        if px[y * w + x] > best.0 {
                            best = (px[y * w + x], x, y);
                        }
                    }
                }
                kps.push(Keypoint {
                    x: best.1 as f32,
                    y: best.2 as f32,
                    scale: 2.0,
                    response: f32::from(best.0) + (best.1 + best.2 * w) as f32 * 1e-7,
                    laplacian: 1,
                    sample_x: best.1 as u32,
                    sample_y: best.2 as u32,
                    ..Default::default()
                });
            }
        }
        kps.sort_by(Keypoint::rank_cmp);
        let max = params.max_keypoints as usize;
        let dropped = kps.len().saturating_sub(max);
        kps.truncate(max);
        let descriptors = kps
            .iter()
            .map(|k| {
                let mut d: Descriptor = [0.0; 64];
                for (i, v) in d.iter_mut().enumerate() {
                    let (x, y) = (k.x as usize + i % 8, k.y as usize + i / 8);
                    *v = f32::from(px[(y.min(h - 1)) * w + x.min(w - 1)]) + 1.0;
                }
                let n = d.iter().map(|v| v * v).sum::<f32>().sqrt();
                d.iter_mut().for_each(|v| *v /= n);
                d
            })
            .collect();
        Ok(Detection {
            width: w,
            height: h,
            keypoints: kps,
            descriptors,
            dropped,
            timings: Vec::new(),
        })
    }
    fn match_frames(
        &mut self,
        q: &mut Detection,
        t: &mut Detection,
        params: &NodeParams,
    ) -> Result<Vec<MatchMsg>, ProcessorError> {
        let mut out = Vec::new();
        for (qi, qd) in q.descriptors.iter().enumerate() {
            let mut best = (f32::INFINITY, f32::INFINITY, 0usize);
            for (ti, td) in t.descriptors.iter().enumerate() {
                let d = qd
                    .iter()
                    .zip(td)
                    .map(|(a, b)| (a - b) * (a - b))
                    .sum::<f32>()
                    .sqrt();
                if d < best.0 {
                    best = (d, best.0, ti);
                } else if d < best.1 {
                    best.1 = d;
                }
            }
            if best.0 < params.ratio as f32 * best.1 || (best.0.is_finite() && !best.1.is_finite())
            {
                out.push(MatchMsg {
                    query: qi as u32,
                    train: best.2 as u32,
                    distance: best.0,
                });
            }
        }
        Ok(out)
    }
}
