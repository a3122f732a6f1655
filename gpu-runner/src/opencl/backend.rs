//! [`OpenClBackend`]: the OpenCL detectors and matcher behind the [`Backend`] seam.

use std::mem::discriminant;

use surfcl_core::describe::to_q7;
use surfcl_core::matcher::{Match, MatchConfig};
use surfcl_core::{DescriptorQ7, GrayImage};

use super::detector::{Detector, DetectorConfig};
use super::device::select;
use super::error::OpenClError;
use super::frame::{DetectOutput, PinnedFrame};
use super::gpu::Gpu;
use super::matcher::{GpuMatcher, MatchTimings};
use crate::backend::{
    Backend, DescriptorKind, DetectParams, Features, InputFrame, detect_frame_bytes,
};
use crate::error::{Error, InputAreaError};

/// The OpenCL backend: one device, one context and queue, at most one [`Detector`] per kind
/// (SURF, Harris; each made on first use, rebuilt only when a frame is larger than it was made
/// for or the parameters change), and a [`GpuMatcher`].
///
/// Harris corners get upright SURF-64 descriptors at the configured fixed scale, as on the CPU
/// backend. [`Backend::input_area`] hands out the detector's pinned input area
/// ([`Detector::input_buffer`]).
#[derive(Debug)]
pub struct OpenClBackend {
    gpu: Gpu,
    detectors: Vec<Detector>,
    matcher: Option<GpuMatcher>,
    local_size: Option<usize>,
    /// The frame the pinned input area was last handed out for, until it is detected: without
    /// it `detect_input_into` could not tell a written frame from the last one's pixels.
    handed_out: Option<HandedOut>,
}

/// What [`Backend::input_area`] handed the area out for.
#[derive(Debug, Clone, Copy)]
struct HandedOut {
    width: usize,
    height: usize,
    /// The detector whose area it is (its configuration, for any frame size).
    detector: DetectorConfig,
}

impl OpenClBackend {
    /// Opens the device chosen by `spec` (see [`open`]).
    pub fn new(spec: Option<&str>) -> Result<Self, OpenClError> {
        Ok(Self {
            gpu: Gpu::new(select(spec)?)?,
            detectors: Vec::new(),
            matcher: None,
            local_size: None,
            handed_out: None,
        })
    }

    /// Uses `local_size` work-items per group in the detectors made from now on (results do not
    /// depend on it; tests use it to check that).
    pub fn with_local_size(mut self, local_size: usize) -> Self {
        self.local_size = Some(local_size);
        self.detectors.clear();
        self.handed_out = None;
        self
    }

    /// Device memory held by the current detectors, bytes (0 before the first frame).
    pub fn device_bytes(&self) -> u64 {
        self.detectors.iter().map(Detector::device_bytes).sum()
    }

    /// The configuration of the detector for a `width x height` frame with `params`.
    fn wanted(&self, width: usize, height: usize, params: &DetectParams) -> DetectorConfig {
        DetectorConfig::for_params(params, width, height).with_local_size(self.local_size)
    }

    /// The detector for a `width x height` frame with `params` (see [`Self::detector_index`]).
    fn detector_for(
        &mut self,
        width: usize,
        height: usize,
        params: &DetectParams,
    ) -> Result<&mut Detector, OpenClError> {
        let i = self.detector_index(width, height, params)?;
        self.detectors
            .get_mut(i)
            .ok_or_else(|| OpenClError::Unsupported("detector missing".into()))
    }

    /// Where in `detectors` the detector for a `width x height` frame with `params` is, made
    /// or remade when needed: a remade detector of the same configuration grows to cover both
    /// the old and the new frame size, so alternating sizes do not rebuild every frame.
    fn detector_index(
        &mut self,
        width: usize,
        height: usize,
        params: &DetectParams,
    ) -> Result<usize, OpenClError> {
        let wanted = self.wanted(width, height, params);
        let mut size = (width, height);
        if let Some(i) = self
            .detectors
            .iter()
            .position(|d| discriminant(&d.config()) == discriminant(&wanted))
        {
            let current = self.detectors[i].config();
            let (max_w, max_h) = current.max_size();
            if current.same_detector(&wanted) {
                if max_w >= width && max_h >= height {
                    return Ok(i);
                }
                size = (width.max(max_w), height.max(max_h));
            }
            // Drop the old buffers first so the device never holds both.
            self.detectors.swap_remove(i);
        }
        if surfcl_core::image::check_dimensions(size.0, size.1).is_err() {
            size = (width, height);
        }
        let config = wanted.with_max_size(size.0, size.1);
        self.detectors
            .push(Detector::new(self.gpu.clone(), config)?);
        Ok(self.detectors.len() - 1)
    }

    /// Runs `detect` on the detector for a `width x height` frame with `params`, into `out`'s
    /// arrays (lent to the detector and given back, also on failure: their memory is what the
    /// caller reuses).
    fn detect_frame_into(
        &mut self,
        width: usize,
        height: usize,
        params: &DetectParams,
        out: &mut Features,
        detect: impl FnOnce(&mut Detector, &mut DetectOutput) -> Result<(), OpenClError>,
    ) -> Result<(), Error> {
        let mut frame = DetectOutput {
            keypoints: std::mem::take(&mut out.keypoints),
            descriptors: std::mem::take(&mut out.descriptors),
            ..DetectOutput::default()
        };
        let result = self
            .detector_for(width, height, params)
            .and_then(|detector| detect(detector, &mut frame));
        out.keypoints = frame.keypoints;
        out.descriptors = frame.descriptors;
        result?;
        out.width = width;
        out.height = height;
        out.dropped = frame.dropped;
        out.timings = frame.timings;
        Ok(())
    }
}

impl Backend for OpenClBackend {
    fn name(&self) -> &'static str {
        "opencl"
    }

    fn device(&self) -> String {
        let i = &self.gpu.selected.info;
        format!("{} / {} ({})", i.platform, i.name, i.kind)
    }

    fn detect(&mut self, image: &GrayImage<'_>, params: &DetectParams) -> Result<Features, Error> {
        let mut features = Features::default();
        self.detect_into(image, params, &mut features)?;
        Ok(features)
    }

    /// Fills `out`'s keypoint and descriptor arrays in place ([`Detector::detect_into`]): no
    /// allocation for them once they are large enough.
    fn detect_into(
        &mut self,
        image: &GrayImage<'_>,
        params: &DetectParams,
        out: &mut Features,
    ) -> Result<(), Error> {
        params.validate()?;
        // This frame may remake the detector (a larger size, other parameters), and with it
        // the input area: a frame handed out before cannot be detected after it.
        self.handed_out = None;
        self.detect_frame_into(
            image.width(),
            image.height(),
            params,
            out,
            |detector, frame| detector.detect_into(image, frame),
        )
    }

    /// The pinned input area of the detector for `params`, made (or remade larger) for the
    /// frame size first.
    fn input_area(
        &mut self,
        width: usize,
        height: usize,
        params: &DetectParams,
    ) -> Result<Option<&mut [u8]>, Error> {
        params.validate()?;
        // Whatever was handed out before is abandoned, also when this call fails.
        self.handed_out = None;
        let detector = self.wanted(width, height, params);
        let i = self.detector_index(width, height, params)?;
        let area = self
            .detectors
            .get_mut(i)
            .ok_or_else(|| OpenClError::Unsupported("detector missing".into()))?
            .input_buffer(width, height)?;
        self.handed_out = Some(HandedOut {
            width,
            height,
            detector,
        });
        Ok(Some(area))
    }

    /// Uploads the handed-out frame from the pinned area by DMA ([`Detector::detect_input_into`]),
    /// refilling `out`'s arrays in place as [`Backend::detect_into`] does.
    fn detect_input_into(
        &mut self,
        width: usize,
        height: usize,
        params: &DetectParams,
        out: &mut Features,
    ) -> Result<(), Error> {
        // Taken whatever happens next: a frame is detected (or fails) once.
        let handed_out = self.handed_out.take().ok_or(InputAreaError::NotWritten)?;
        if (handed_out.width, handed_out.height) != (width, height) {
            return Err(InputAreaError::SizeMismatch {
                written_width: handed_out.width,
                written_height: handed_out.height,
                width,
                height,
            }
            .into());
        }
        params.validate()?;
        if !handed_out
            .detector
            .same_detector(&self.wanted(width, height, params))
        {
            return Err(InputAreaError::ParamsChanged.into());
        }
        // The same detector as `input_area` found: it covers this size, and nothing has
        // remade it since (every other detection clears `handed_out`).
        self.detect_frame_into(width, height, params, out, |detector, frame| {
            detector.detect_input_into(width, height, frame)
        })
    }

    /// A [`PinnedFrame`] of this backend's context.
    fn input_frame(&mut self, capacity: usize) -> Result<Option<Box<dyn InputFrame>>, Error> {
        Ok(Some(Box::new(PinnedFrame::new(&self.gpu, capacity)?)))
    }

    /// A [`PinnedFrame`] is uploaded from where it is by DMA ([`Detector::detect_pinned_into`]);
    /// any other frame is detected from its bytes as `detect_into` detects an image.
    fn detect_frame_into(
        &mut self,
        frame: &mut dyn InputFrame,
        width: usize,
        height: usize,
        params: &DetectParams,
        out: &mut Features,
    ) -> Result<(), Error> {
        params.validate()?;
        if let Some(pinned) = (frame as &mut dyn std::any::Any).downcast_mut::<PinnedFrame>() {
            // This frame may remake the detector (a larger size, other parameters), and with
            // it the input area: a frame handed out before cannot be detected after it.
            self.handed_out = None;
            return self.detect_frame_into(width, height, params, out, |detector, f| {
                detector.detect_pinned_into(pinned, width, height, f)
            });
        }
        detect_frame_bytes(self, frame, width, height, params, out)
    }

    fn match_features(
        &mut self,
        query: &Features,
        train: &Features,
        config: &MatchConfig,
        descriptor: DescriptorKind,
    ) -> Result<Vec<Match>, Error> {
        config.validate()?;
        if self.matcher.is_none() {
            self.matcher = Some(GpuMatcher::new(self.gpu.clone())?);
        }
        let Some(matcher) = self.matcher.as_mut() else {
            return Err(OpenClError::Unsupported("matcher missing".into()).into());
        };
        let mut timings = MatchTimings::default();
        let matches = match descriptor {
            DescriptorKind::F32 => matcher.match_f32(
                &query.keypoints,
                &query.descriptors,
                &train.keypoints,
                &train.descriptors,
                config,
                &mut timings,
            )?,
            DescriptorKind::Q7 => {
                let qd: Vec<DescriptorQ7> = query.descriptors.iter().map(to_q7).collect();
                let td: Vec<DescriptorQ7> = train.descriptors.iter().map(to_q7).collect();
                matcher.match_q7(
                    &query.keypoints,
                    &qd,
                    &train.keypoints,
                    &td,
                    config,
                    &mut timings,
                )?
            }
        };
        Ok(matches)
    }
}

/// Opens the OpenCL backend on the device chosen by `spec` (`None` or "auto": a GPU, else an
/// accelerator, else any device, an OpenCL CPU device included; a number: the index in
/// `list_devices`; otherwise a name substring).
pub fn open(spec: Option<&str>) -> Result<Box<dyn Backend>, OpenClError> {
    Ok(Box::new(OpenClBackend::new(spec)?))
}

#[cfg(test)]
mod tests {
    use surfcl_core::Keypoint;

    use super::*;
    use crate::backend::DetectorKind;

    /// A `w x h` crop of boat image 1 at (`x0`, `y0`).
    fn boat_crop(x0: usize, y0: usize, w: usize, h: usize) -> Vec<u8> {
        let boat = crate::opencl::test_images::boat();
        (0..h)
            .flat_map(|y| {
                boat.pixels[(y0 + y) * boat.width + x0..][..w]
                    .iter()
                    .copied()
            })
            .collect()
    }

    /// An OpenCL backend; fails (rather than passing vacuously) without an OpenCL device.
    fn backend() -> OpenClBackend {
        OpenClBackend::new(None).unwrap_or_else(|e| {
            panic!("this test needs an OpenCL device (CI: apt-get install pocl-opencl-icd): {e}")
        })
    }

    #[test]
    fn detect_into_reuses_the_arrays_and_alternating_frames_read_back_once() {
        let (w, h) = (240, 180);
        let busy = boat_crop(300, 250, w, h);
        // The same picture, its left three quarters flat: far fewer keypoints.
        let mut plain = busy.clone();
        for row in plain.chunks_mut(w) {
            row[..3 * w / 4].fill(128);
        }
        let frames = [
            GrayImage::new(&busy, w, h).unwrap(),
            GrayImage::new(&plain, w, h).unwrap(),
        ];
        let params = DetectParams {
            max_keypoints: 2000,
            ..DetectParams::default()
        };
        params.validate().unwrap();
        let mut reference = backend();
        let expected: Vec<Features> = frames
            .iter()
            .map(|f| reference.detect(f, &params).unwrap())
            .collect();
        let (kept_busy, kept_plain) = (expected[0].keypoints.len(), expected[1].keypoints.len());
        assert!(
            kept_busy > crate::opencl::frame::readback_hint(kept_plain, params.max_keypoints),
            "the pictures must differ enough to test the readback hint: {kept_busy} and {kept_plain} keypoints"
        );

        let mut backend = backend();
        // Arrays of another size and garbage everywhere: all must be replaced.
        let mut out = Features {
            width: 1,
            height: 1,
            keypoints: vec![Keypoint::default(); 3000],
            descriptors: vec![[0.5; 64]; 3000],
            dropped: 7,
            timings: vec![crate::backend::StageTiming {
                name: "stale".into(),
                ms: 1.0,
            }],
        };
        let capacity = out.descriptors.capacity();
        for i in 0..8 {
            let before = backend.detectors.first().map_or(0, Detector::readbacks);
            backend
                .detect_into(&frames[i % 2], &params, &mut out)
                .unwrap();
            let want = &expected[i % 2];
            assert_eq!(
                (out.width, out.height, out.dropped),
                (want.width, want.height, want.dropped)
            );
            assert_eq!(out.keypoints, want.keypoints, "frame {i}");
            assert_eq!(out.descriptors, want.descriptors, "frame {i}");
            // Device times exist only on profiling queues: whatever there is, it is this frame's.
            assert!(out.timings.iter().all(|t| t.name != "stale"));
            // Refilled in place: no array of its own size was allocated.
            assert_eq!(out.descriptors.capacity(), capacity, "frame {i}");
            let readbacks = backend.detectors.first().map_or(0, Detector::readbacks) - before;
            // The first busy frame after the first plain one is sized from both.
            if i >= 1 {
                assert_eq!(readbacks, 1, "frame {i} read back {readbacks} times");
            }
        }
    }

    /// Writes `pixels` into the backend's input area for a `w x h` frame and detects it into
    /// `out`.
    fn detect_written(
        backend: &mut dyn Backend,
        pixels: &[u8],
        (w, h): (usize, usize),
        params: &DetectParams,
        out: &mut Features,
    ) -> Result<(), Error> {
        let area = backend
            .input_area(w, h, params)?
            .expect("the OpenCL backend has an input area");
        assert_eq!(area.len(), w * h, "the area is exactly one frame");
        area.copy_from_slice(pixels);
        backend.detect_input_into(w, h, params, out)
    }

    /// The two frame sizes of the input-area and input-frame tests.
    const SMALL: (usize, usize) = (240, 180);
    const LARGE: (usize, usize) = (320, 240);

    /// A busy crop of the boat of the small size and a wide one of the large size.
    fn small_and_large_frames() -> (Vec<u8>, Vec<u8>) {
        (
            boat_crop(300, 250, SMALL.0, SMALL.1),
            boat_crop(100, 100, LARGE.0, LARGE.1),
        )
    }

    #[test]
    fn frames_written_into_the_input_area_detect_as_detect_into() {
        // Two sizes, the second larger (the detector is remade, and its input area with it),
        // then the first again; two pictures of the first size.
        let (busy, wide) = small_and_large_frames();
        let mut plain = busy.clone();
        for row in plain.chunks_mut(SMALL.0) {
            row[..SMALL.0 / 2].fill(128);
        }
        let frames = [
            (&busy, SMALL),
            (&plain, SMALL),
            (&wide, LARGE),
            (&busy, SMALL),
            (&plain, SMALL),
        ];
        for detector in [DetectorKind::Surf, DetectorKind::Harris] {
            let params = DetectParams {
                detector,
                max_keypoints: 1500,
                ..DetectParams::default()
            };
            let mut reference = backend();
            let mut pinned = backend();
            let mut out = Features::default();
            let mut capacity = 0;
            for (i, (pixels, (w, h))) in frames.iter().enumerate() {
                let image = GrayImage::new(pixels, *w, *h).unwrap();
                let want = reference.detect(&image, &params).unwrap();
                detect_written(&mut pinned, pixels, (*w, *h), &params, &mut out).unwrap();
                let what = format!("{detector:?} frame {i}");
                assert!(!want.keypoints.is_empty(), "{what}");
                assert_eq!(
                    (out.width, out.height, out.dropped),
                    (want.width, want.height, want.dropped),
                    "{what}"
                );
                assert_eq!(out.keypoints, want.keypoints, "{what}");
                assert_eq!(out.descriptors, want.descriptors, "{what}");
                assert!(out.timings.iter().all(|t| t.ms >= 0.0), "{what}");
                if i == 0 {
                    capacity = out.descriptors.capacity();
                } else if out.descriptors.len() <= capacity {
                    // Refilled in place, as detect_into does.
                    assert_eq!(out.descriptors.capacity(), capacity, "{what}");
                } else {
                    capacity = out.descriptors.capacity();
                }
            }
        }
    }

    #[test]
    fn the_input_area_detects_each_written_frame_once_and_refuses_misuse() {
        let (w, h) = (160, 120);
        let pixels = boat_crop(300, 250, w, h);
        let params = DetectParams::default();
        let harris = DetectParams {
            detector: DetectorKind::Harris,
            ..params
        };
        let want = backend()
            .detect(&GrayImage::new(&pixels, w, h).unwrap(), &params)
            .unwrap();
        let mut backend = backend();
        let mut out = Features::default();
        let refusal = |result: Result<(), Error>| match result {
            Err(Error::InputArea(e)) => e,
            other => panic!("expected an input area error, got {other:?}"),
        };

        // Nothing written yet.
        assert_eq!(
            refusal(backend.detect_input_into(w, h, &params, &mut out)),
            InputAreaError::NotWritten
        );
        // One written frame, one detection.
        detect_written(&mut backend, &pixels, (w, h), &params, &mut out).unwrap();
        assert_eq!(out.keypoints, want.keypoints);
        assert_eq!(
            refusal(backend.detect_input_into(w, h, &params, &mut out)),
            InputAreaError::NotWritten
        );
        // Another size than the one handed out; the frame is then gone.
        backend.input_area(w, h, &params).unwrap();
        assert_eq!(
            refusal(backend.detect_input_into(w - 1, h, &params, &mut out)),
            InputAreaError::SizeMismatch {
                written_width: w,
                written_height: h,
                width: w - 1,
                height: h
            }
        );
        assert_eq!(
            refusal(backend.detect_input_into(w, h, &params, &mut out)),
            InputAreaError::NotWritten
        );
        // Another detector than the one whose area was handed out.
        backend.input_area(w, h, &params).unwrap();
        assert_eq!(
            refusal(backend.detect_input_into(w, h, &harris, &mut out)),
            InputAreaError::ParamsChanged
        );
        // A detection from the caller's memory in between (it may remake the detector).
        backend.input_area(w, h, &params).unwrap();
        let larger = boat_crop(0, 0, 2 * w, 2 * h);
        backend
            .detect_into(
                &GrayImage::new(&larger, 2 * w, 2 * h).unwrap(),
                &params,
                &mut out,
            )
            .unwrap();
        assert_eq!(
            refusal(backend.detect_input_into(w, h, &params, &mut out)),
            InputAreaError::NotWritten
        );
        // Sizes outside the core's limits and invalid parameters: errors, nothing handed out.
        for (bad_w, bad_h) in [(0, h), (w, 0), (1 << 20, 1 << 20)] {
            assert!(
                backend.input_area(bad_w, bad_h, &params).is_err(),
                "{bad_w}x{bad_h}"
            );
        }
        let invalid = DetectParams {
            max_keypoints: 0,
            ..params
        };
        assert!(backend.input_area(w, h, &invalid).is_err());
        backend.input_area(w, h, &params).unwrap();
        assert!(backend.detect_input_into(w, h, &invalid, &mut out).is_err());
        // None of that broke the backend.
        detect_written(&mut backend, &pixels, (w, h), &params, &mut out).unwrap();
        assert_eq!(out.keypoints, want.keypoints);
        assert_eq!(out.descriptors, want.descriptors);
    }

    #[test]
    fn a_boxed_backend_forwards_its_input_area_and_the_cpu_backend_has_none() {
        let (w, h) = (160, 120);
        let pixels = boat_crop(300, 250, w, h);
        let params = DetectParams::default();
        // Method calls on a `Box<dyn Backend>` go through its own `Backend` impl.
        let mut boxed: Box<dyn Backend> = Box::new(backend());
        let mut out = Features::default();
        detect_written(&mut boxed, &pixels, (w, h), &params, &mut out).unwrap();
        assert!(!out.keypoints.is_empty());

        let mut cpu: Box<dyn Backend> = Box::new(crate::cpu::CpuBackend::new());
        assert!(cpu.input_area(w, h, &params).unwrap().is_none());
        assert!(matches!(
            cpu.detect_input_into(w, h, &params, &mut out),
            Err(Error::InputArea(InputAreaError::Unsupported))
        ));
    }

    /// A frame of ordinary memory, as a caller's own [`InputFrame`].
    struct Heap(Vec<u8>);

    impl InputFrame for Heap {
        fn capacity(&self) -> usize {
            self.0.len()
        }
        fn pixels_mut(&mut self) -> Result<&mut [u8], Error> {
            Ok(&mut self.0)
        }
    }

    #[test]
    fn input_frames_filled_on_another_thread_detect_as_detect_into() {
        let (busy, wide) = small_and_large_frames();
        let frames = [
            (&busy, SMALL),
            (&wide, LARGE),
            (&busy, SMALL),
            (&wide, LARGE),
        ];
        let params = DetectParams {
            max_keypoints: 1500,
            ..DetectParams::default()
        };
        let mut reference = backend();
        // Boxed, as the ROS node holds it: the frames go through its forwarding.
        let mut pinned: Box<dyn Backend> = Box::new(backend());
        let capacity = LARGE.0 * LARGE.1;
        // Two frames, filled in turn on another thread while the other is detected.
        let mut spare = pinned
            .input_frame(capacity)
            .unwrap()
            .expect("pinned frames");
        let mut current = pinned
            .input_frame(capacity)
            .unwrap()
            .expect("pinned frames");
        assert!(spare.capacity() >= capacity);
        let fill = |frame: &mut Box<dyn InputFrame>, pixels: &[u8]| {
            frame.pixels_mut().unwrap()[..pixels.len()].copy_from_slice(pixels);
        };
        fill(&mut current, frames[0].0);
        let mut out = Features::default();
        for (i, (pixels, (w, h))) in frames.iter().enumerate() {
            let next = frames.get(i + 1).map(|(p, _)| *p);
            let (detected, filled) = std::thread::scope(|scope| {
                let filler = scope.spawn(move || {
                    if let Some(p) = next {
                        fill(&mut spare, p);
                    }
                    spare
                });
                let detected =
                    pinned.detect_frame_into(current.as_mut(), *w, *h, &params, &mut out);
                (detected, filler.join().unwrap())
            });
            detected.unwrap();
            let want = reference
                .detect(&GrayImage::new(pixels, *w, *h).unwrap(), &params)
                .unwrap();
            assert!(!want.keypoints.is_empty(), "frame {i}");
            assert_eq!((out.width, out.height), (*w, *h), "frame {i}");
            assert_eq!(out.keypoints, want.keypoints, "frame {i}");
            assert_eq!(out.descriptors, want.descriptors, "frame {i}");
            assert_eq!(out.dropped, want.dropped, "frame {i}");
            (current, spare) = (filled, current);
        }
        // A frame of ordinary memory is detected from its bytes, with the same result.
        let mut heap = Heap(busy.clone());
        pinned
            .detect_frame_into(&mut heap, SMALL.0, SMALL.1, &params, &mut out)
            .unwrap();
        let want = reference
            .detect(&GrayImage::new(&busy, SMALL.0, SMALL.1).unwrap(), &params)
            .unwrap();
        assert_eq!(out.keypoints, want.keypoints);
        // Frames too small for the size, or sizes outside the core's limits, are errors.
        for (w, h) in [(LARGE.0 + 1, LARGE.1), (0, 10)] {
            assert!(
                pinned
                    .detect_frame_into(current.as_mut(), w, h, &params, &mut out)
                    .is_err(),
                "{w}x{h}"
            );
        }
        // None of that broke the backend; the CPU backend has no frames but detects any.
        fill(&mut current, &busy);
        pinned
            .detect_frame_into(current.as_mut(), SMALL.0, SMALL.1, &params, &mut out)
            .unwrap();
        assert_eq!(out.keypoints, want.keypoints);
        let mut cpu: Box<dyn Backend> = Box::new(crate::cpu::CpuBackend::new());
        assert!(cpu.input_frame(capacity).unwrap().is_none());
        cpu.detect_frame_into(current.as_mut(), SMALL.0, SMALL.1, &params, &mut out)
            .unwrap();
        assert!(!out.keypoints.is_empty());
    }
}
