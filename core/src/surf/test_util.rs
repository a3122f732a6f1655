//! Test helpers shared by the SURF and descriptor tests (std is available in tests).

use std::vec::Vec;

use crate::GrayImage;
use crate::integral::{IntegralImage, integral_len};
use crate::keypoint::{Keypoint, KeypointBuffer, KeypointSink};
use crate::surf::{self, DetectStats, SurfConfig};

/// An owned image with its integral table.
pub(crate) struct Owned {
    pub pixels: Vec<u8>,
    pub width: usize,
    pub height: usize,
    pub table: Vec<u32>,
}

impl Owned {
    pub fn new(pixels: Vec<u8>, width: usize, height: usize) -> Self {
        let image = GrayImage::new(&pixels, width, height).unwrap();
        let mut table = std::vec![0u32; integral_len(width, height).unwrap()];
        IntegralImage::compute(&image, &mut table).unwrap();
        Self {
            pixels,
            width,
            height,
            table,
        }
    }
    pub fn ii(&self) -> IntegralImage<'_> {
        IntegralImage::from_table(&self.table, self.width, self.height).unwrap()
    }
}

/// Reads a binary PGM (P5, maxval <= 255, `#` comments allowed).
pub(crate) fn read_pgm(path: &str) -> Owned {
    let bytes = std::fs::read(path).unwrap();
    let mut fields = Vec::new();
    let mut pos = 0;
    while fields.len() < 4 {
        while bytes[pos].is_ascii_whitespace() {
            pos += 1;
        }
        if bytes[pos] == b'#' {
            while bytes[pos] != b'\n' {
                pos += 1;
            }
            continue;
        }
        let start = pos;
        while !bytes[pos].is_ascii_whitespace() {
            pos += 1;
        }
        fields.push(std::str::from_utf8(&bytes[start..pos]).unwrap().to_string());
    }
    pos += 1; // the single whitespace after maxval
    assert_eq!(fields[0], "P5");
    let (w, h): (usize, usize) = (fields[1].parse().unwrap(), fields[2].parse().unwrap());
    assert!(fields[3].parse::<u32>().unwrap() <= 255);
    Owned::new(bytes[pos..pos + w * h].to_vec(), w, h)
}

/// The Oxford boat image `n` (1..=6).
pub(crate) fn boat(n: u32) -> Owned {
    read_pgm(&std::format!(
        "{}/../data/oxford-boat/img{n}.pgm",
        env!("CARGO_MANIFEST_DIR")
    ))
}

/// Runs detection into a large buffer and returns the keypoints (strongest first) and stats.
pub(crate) fn detect_vec(img: &Owned, config: &SurfConfig) -> (Vec<Keypoint>, DetectStats) {
    let mut scratch = std::vec![0u32; surf::scratch_len(config, img.width, img.height).unwrap()];
    let mut storage = std::vec![Keypoint::default(); 200_000];
    let mut buffer = KeypointBuffer::new(&mut storage);
    let stats = surf::detect(&img.ii(), config, &mut scratch, &mut buffer).unwrap();
    (buffer.points().to_vec(), stats)
}

/// A synthetic image: background `bg` plus Gaussian blobs `(x, y, sigma, amplitude)`.
pub(crate) fn blobs(width: usize, height: usize, bg: f32, spots: &[(f32, f32, f32, f32)]) -> Owned {
    let mut pixels = std::vec![0u8; width * height];
    for y in 0..height {
        for x in 0..width {
            let mut v = bg;
            for &(cx, cy, s, a) in spots {
                let (dx, dy) = (x as f32 - cx, y as f32 - cy);
                v += a * (-(dx * dx + dy * dy) / (2.0 * s * s)).exp();
            }
            pixels[y * width + x] = v.round().clamp(0.0, 255.0) as u8;
        }
    }
    Owned::new(pixels, width, height)
}
