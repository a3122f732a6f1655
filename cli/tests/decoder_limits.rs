//! The image decoder's memory limits hold on every pass, the header pass included: a small PNG
//! whose iCCP chunk (read while the decoder looks for the header) inflates to 600 MiB must not
//! make `surfcl` allocate it. Before the fix the header pass ran with the `image` crate's default
//! 512 MiB budget and the process peaked at about 530 MB.
//!
//! Alone in its test binary: the peak resident memory of children (`getrusage(RUSAGE_CHILDREN)`)
//! is then that of the one child run here.

use std::path::Path;
use std::process::Command;

use nix::sys::resource::{UsageWho, getrusage};

/// Deflate bits, least significant first.
struct Bits {
    out: Vec<u8>,
    acc: u64,
    n: u32,
}

impl Bits {
    fn put(&mut self, value: u64, count: u32) {
        self.acc |= value << self.n;
        self.n += count;
        while self.n >= 8 {
            self.out.push(self.acc as u8);
            self.acc >>= 8;
            self.n -= 8;
        }
    }
    /// A Huffman code: most significant bit first.
    fn code(&mut self, code: u64, len: u32) {
        let mut reversed = 0;
        for i in 0..len {
            reversed |= ((code >> i) & 1) << (len - 1 - i);
        }
        self.put(reversed, len);
    }
}

/// A zlib stream that inflates to about `size` zero bytes: one fixed-Huffman block holding a
/// literal 0 and then copies of 258 bytes at distance 1 (13 bits each, a ratio of about 160).
fn zlib_bomb(size: u64) -> Vec<u8> {
    let mut bits = Bits {
        out: vec![0x78, 0x01],
        acc: 0,
        n: 0,
    };
    bits.put(1, 1); // BFINAL
    bits.put(1, 2); // BTYPE = fixed Huffman
    bits.code(0x30, 8); // literal 0
    for _ in 0..size / 258 {
        bits.code(0xC5, 8); // length code 285: 258 bytes
        bits.code(0, 5); // distance code 0: distance 1
    }
    bits.code(0, 7); // end of block
    bits.put(0, 7); // flush to a byte
    // A zero adler32: never checked, the limit stops the inflater long before the end.
    bits.out.extend_from_slice(&[0, 0, 0, 0]);
    bits.out
}

/// A valid 32x32 grey PNG with an iCCP chunk right after IHDR that inflates to `bomb` bytes.
/// The `png` encoder writes the raw chunk as given (with its CRC), the bomb included.
fn png_with_iccp_bomb(dir: &Path, bomb: u64) -> std::path::PathBuf {
    let mut iccp = b"bomb\0\0".to_vec(); // profile name, NUL, compression method 0
    iccp.extend_from_slice(&zlib_bomb(bomb));
    let pixels: Vec<u8> = (0..32 * 32)
        .map(|i| (((i % 32) * 8) ^ ((i / 32) * 8)) as u8)
        .collect();
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, 32, 32);
    encoder.set_color(png::ColorType::Grayscale);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().unwrap();
    writer.write_chunk(png::chunk::iCCP, &iccp).unwrap();
    writer.write_image_data(&pixels).unwrap();
    writer.finish().unwrap();
    let path = dir.join("iccp-bomb.png");
    std::fs::write(&path, out).unwrap();
    path
}

#[test]
fn an_iccp_zlib_bomb_stays_under_the_decoder_cap() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("surfcl-decoder-limits");
    std::fs::create_dir_all(&dir).unwrap();
    let path = png_with_iccp_bomb(&dir, 600 << 20);
    let size = std::fs::metadata(&path).unwrap().len();
    assert!(size < 8 << 20, "the bomb file is {size} bytes");

    let out = Command::new(env!("CARGO_BIN_EXE_surfcl"))
        .args(["detect", path.to_str().unwrap(), "--backend", "cpu"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !err.contains("panicked") && !err.contains("memory allocation"),
        "{err}"
    );
    // The profile is dropped (the image has no use for it) or the file refused; either way the
    // run ends normally.
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{:?}: {err}",
        out.status
    );

    let peak_kib = getrusage(UsageWho::RUSAGE_CHILDREN).unwrap().max_rss();
    let peak_mib = peak_kib / 1024;
    eprintln!("peak RSS of surfcl on a {size}-byte iCCP bomb: {peak_mib} MiB");
    // The header pass may inflate 16 MiB (io::HEADER_PASS_ALLOC), the decode pass the image and
    // 16 MiB of slack: far below io::MAX_DECODE_ALLOC (about 145 MiB), the largest decoder
    // allocation for any accepted image.
    assert!(peak_mib < 100, "peak RSS {peak_mib} MiB");
}
