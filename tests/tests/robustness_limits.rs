//! Declared sizes far beyond the limits get typed errors, no panic and no large allocation.
//!
//! Allocation is measured as the growth of the process's peak resident set (`VmHWM` in
//! `/proc/self/status`). All the RSS-sensitive cases run inside one test, in sequence; the other
//! tests of this file allocate only kilobytes, so they cannot hide or fake a large growth.

use std::path::Path;

use surfcl_cli::io::{decode_gray, load_homography};
use surfcl_core::harris::HarrisConfig;
use surfcl_core::homography::{Homography, HomographyError};
use surfcl_core::image::{MAX_DIMENSION, MAX_PIXELS, check_dimensions};
use surfcl_core::matcher::{MatchConfig, MatchError};
use surfcl_core::surf::SurfConfig;
use surfcl_core::{GrayImage, ImageError, Keypoint, harris, surf};
use surfcl_gpu::backend::{
    Backend, DescriptorKind, DetectParams, DetectorKind, Features, MAX_KEYPOINTS_LIMIT,
};
use surfcl_gpu::cpu::CpuBackend;
use surfcl_gpu::error::Error;

/// Peak resident set of this process, in KiB (`None` off Linux).
fn vm_hwm_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// A PNG chunk: length, type, data and the CRC-32 of type and data, so that the PNG inputs are
/// valid up to their sizes.
fn png_chunk(kind: &[u8; 4], data: &[u8]) -> Vec<u8> {
    let body = [&kind[..], data].concat();
    let crc = crc32fast::hash(&body);
    [
        &(data.len() as u32).to_be_bytes()[..],
        &body,
        &crc.to_be_bytes(),
    ]
    .concat()
}

/// A gray 8-bit PNG that declares `w x h` and carries a tiny (stored, truncated) IDAT.
fn png_declaring(w: u32, h: u32) -> Vec<u8> {
    let mut ihdr = w.to_be_bytes().to_vec();
    ihdr.extend_from_slice(&h.to_be_bytes());
    ihdr.extend_from_slice(&[8, 0, 0, 0, 0]);
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    png.extend(png_chunk(b"IHDR", &ihdr));
    // zlib header + a stored block of 4 zero bytes: far fewer rows than declared.
    png.extend(png_chunk(
        b"IDAT",
        &[0x78, 0x01, 0x01, 0x04, 0x00, 0xfb, 0xff, 0, 0, 0, 0],
    ));
    png.extend(png_chunk(b"IEND", &[]));
    png
}

/// A baseline JPEG header (SOI, SOF0) that declares `w x h`, with no scan data.
fn jpeg_declaring(w: u16, h: u16) -> Vec<u8> {
    let mut j = vec![0xFF, 0xD8, 0xFF, 0xC0, 0x00, 0x0B, 0x08];
    j.extend_from_slice(&h.to_be_bytes());
    j.extend_from_slice(&w.to_be_bytes());
    j.extend_from_slice(&[0x01, 0x01, 0x11, 0x00, 0xFF, 0xD9]);
    j
}

fn decode_err(bytes: &[u8]) -> String {
    match decode_gray(bytes, Path::new("hostile")) {
        Ok(img) => panic!(
            "decoded a {}x{} image from {} bytes",
            img.width,
            img.height,
            bytes.len()
        ),
        Err(e) => {
            assert!(matches!(e, Error::Decode { .. }), "{e:?}");
            e.to_string()
        }
    }
}

/// Every hostile input in sequence; the peak RSS may grow by at most `LIMIT_MIB` over all the
/// beyond-limit cases (honouring any one of their declared sizes would take gigabytes).
#[test]
fn hostile_sizes_are_refused_without_large_allocations() {
    const LIMIT_MIB: u64 = 16;
    let before = vm_hwm_kib();

    // Images: headers declaring 100000 x 100000 (and other beyond-limit sizes), tiny bodies.
    let e = decode_err(b"P5\n100000 100000\n255\n\0\0\0\0");
    assert!(e.contains("too large"), "{e}");
    let e = decode_err(b"P5\n16385 1\n255\n\0");
    assert!(e.contains("too large"), "{e}");
    let e = decode_err(b"P6\n99999999999999999999 2\n255\n\0");
    assert!(!e.is_empty());
    let e = decode_err(&png_declaring(100_000, 100_000));
    assert!(e.contains("too large"), "{e}");
    let e = decode_err(&png_declaring(u32::MAX, 1));
    assert!(!e.is_empty());
    let e = decode_err(&png_declaring(16_384, 16_384));
    assert!(e.contains("too large"), "{e}");
    let e = decode_err(&jpeg_declaring(65_000, 65_000));
    assert!(!e.is_empty());

    // max_keypoints far beyond the limit: refused before any keypoint storage is allocated.
    let tiny = vec![128u8; 32 * 32];
    let image = GrayImage::new(&tiny, 32, 32).unwrap();
    let mut cpu = CpuBackend::with_threads(1);
    for max_keypoints in [0, MAX_KEYPOINTS_LIMIT + 1, usize::MAX / 64, usize::MAX] {
        let params = DetectParams {
            detector: DetectorKind::Surf,
            surf: SurfConfig::default(),
            harris: HarrisConfig::default(),
            max_keypoints,
            descriptor: DescriptorKind::F32,
        };
        let e = cpu.detect(&image, &params).unwrap_err();
        assert!(
            matches!(e, Error::InvalidArgument(ref m) if m.contains("max-keypoints")),
            "{e}"
        );
    }
    // The largest valid capacity on a tiny frame: keypoint storage follows the frame (at most
    // one keypoint per pixel), not the 1 000 000 records (32 MB) the parameter allows.
    for detector in [DetectorKind::Surf, DetectorKind::Harris] {
        let params = DetectParams {
            detector,
            surf: SurfConfig::default(),
            harris: HarrisConfig::default(),
            max_keypoints: MAX_KEYPOINTS_LIMIT,
            descriptor: DescriptorKind::F32,
        };
        let f = cpu.detect(&image, &params).unwrap();
        assert_eq!(f.dropped, 0);
    }

    // A homography "file" of megabytes: the parser rejects the text in one pass, and the loader
    // refuses to read more than MAX_HOMOGRAPHY_FILE_BYTES of the file at all.
    let mut big = String::from("1 0 0\n0 1 0\n0 0 1\n");
    big.push_str(&"0 ".repeat(2 << 20));
    assert_eq!(
        Homography::parse(&big),
        Err(HomographyError::WrongCount { found: 10 })
    );
    let dir = std::env::temp_dir().join(format!("surfcl-limits-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("H-huge");
    std::fs::write(&path, &big).unwrap();
    drop(big);
    let e = load_homography(&path).unwrap_err();
    assert!(
        matches!(e, Error::Decode { ref message, .. } if message.contains("larger than")),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).unwrap();

    if let (Some(b), Some(a)) = (before, vm_hwm_kib()) {
        let grown_mib = a.saturating_sub(b) / 1024;
        eprintln!("peak RSS: {b} KiB before, {a} KiB after the hostile inputs (+{grown_mib} MiB)");
        assert!(grown_mib <= LIMIT_MIB, "peak RSS grew by {grown_mib} MiB");
    }

    // Within the limits but truncated: the decoder may allocate up to the accepted image size
    // (bounded by decode limits), and must still fail cleanly.
    let in_limit = {
        let side = 4096u32;
        assert!((side as usize).pow(2) <= MAX_PIXELS);
        png_declaring(side, side)
    };
    let e = decode_err(&in_limit);
    assert!(!e.contains("too large"), "{e}");
    let e = decode_err(b"P5\n4096 4096\n255\n\0\0\0");
    assert!(!e.contains("too large"), "{e}");
    if let (Some(b), Some(a)) = (before, vm_hwm_kib()) {
        eprintln!(
            "peak RSS after truncated in-limit 4096x4096 images: +{} MiB",
            a.saturating_sub(b) / 1024
        );
    }
}

#[test]
fn core_size_checks_are_typed() {
    assert_eq!(check_dimensions(0, 10), Err(ImageError::Empty));
    for (w, h) in [
        (MAX_DIMENSION + 1, 1),
        (1, MAX_DIMENSION + 1),
        (MAX_DIMENSION, MAX_DIMENSION),
        (usize::MAX, usize::MAX),
        (100_000, 100_000),
    ] {
        assert_eq!(
            check_dimensions(w, h),
            Err(ImageError::TooLarge {
                width: w,
                height: h
            })
        );
        assert!(surf::scratch_len(&surf::SurfConfig::default(), w, h).is_err());
        assert!(harris::scratch_len(w, h).is_err());
        assert!(surfcl_core::integral::integral_len(w, h).is_err());
    }
    // A pixel slice that does not match the declared size.
    let px = [0u8; 10];
    assert!(matches!(
        GrayImage::new(&px, 100_000, 100_000),
        Err(ImageError::TooLarge { .. })
    ));
    assert!(matches!(
        GrayImage::new(&px, 3, 4),
        Err(ImageError::BufferLength {
            expected: 12,
            actual: 10
        })
    ));
}

fn features(n_kp: usize, n_desc: usize) -> Features {
    Features {
        width: 64,
        height: 64,
        keypoints: vec![Keypoint::default(); n_kp],
        descriptors: vec![[0.125; 64]; n_desc],
        ..Features::default()
    }
}

#[test]
fn mismatched_descriptor_counts_are_refused() {
    let mut cpu = CpuBackend::with_threads(2);
    let good = features(5, 5);
    for (bad_q, bad_t) in [
        (features(10, 9), good.clone()),
        (good.clone(), features(3, 300)),
    ] {
        for kind in [DescriptorKind::F32, DescriptorKind::Q7] {
            let e = cpu
                .match_features(&bad_q, &bad_t, &MatchConfig::default(), kind)
                .unwrap_err();
            assert!(
                matches!(e, Error::Match(MatchError::LengthMismatch { .. })),
                "{kind:?}: {e:?}"
            );
        }
    }
    // And the same backend still matches well-formed input afterwards.
    let ok = cpu.match_features(&good, &good, &MatchConfig::default(), DescriptorKind::F32);
    assert!(ok.is_ok());
}
