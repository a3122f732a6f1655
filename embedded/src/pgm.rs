//! Binary PGM (`P5`, 8-bit) read from the host through semihosting.

use core::ffi::CStr;
use core::ops::Range;

use semihosting::io::Read as _;

use crate::buffers::{MAX_HEIGHT, MAX_WIDTH};

/// Reads the file at `path` into `buf` and parses its header; returns `(width, height)`.
pub fn read(path: &CStr, buf: &mut [u8]) -> Result<(usize, usize), &'static str> {
    let mut file = semihosting::fs::File::open(path).map_err(|_| "cannot open the image")?;
    let len = file.metadata().map_err(|_| "cannot stat the image")?.len() as usize;
    if len > buf.len() {
        return Err("image file larger than the firmware's 320x240 frame buffer");
    }
    let mut filled = 0;
    while filled < len {
        match file.read(&mut buf[filled..len]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(_) => return Err("cannot read the image"),
        }
    }
    if filled != len {
        return Err("image file shorter than its size");
    }
    let header = parse_header(&buf[..len])?;
    if header.width > MAX_WIDTH || header.height > MAX_HEIGHT {
        return Err("image larger than 320x240");
    }
    Ok((header.width, header.height))
}

/// The range of the pixels in a file whose header [`read`] accepted.
pub fn pixels_range(buf: &[u8], width: usize, height: usize) -> Result<Range<usize>, &'static str> {
    let header = parse_header(buf)?;
    let end = header.offset + width * height;
    if header.width != width || header.height != height || end > buf.len() {
        return Err("truncated PGM: fewer pixels than width x height");
    }
    Ok(header.offset..end)
}

struct Header {
    width: usize,
    height: usize,
    offset: usize,
}

/// `P5 <ws> width <ws> height <ws> 255 <one ws>`, with `#` comments between fields.
fn parse_header(bytes: &[u8]) -> Result<Header, &'static str> {
    if bytes.len() < 2 || &bytes[..2] != b"P5" {
        return Err("not a binary PGM (P5) file");
    }
    let mut at = 2;
    let mut fields = [0usize; 3];
    for field in fields.iter_mut() {
        at = skip_space_and_comments(bytes, at);
        let start = at;
        let mut value: usize = 0;
        while let Some(&c) = bytes.get(at) {
            if !c.is_ascii_digit() {
                break;
            }
            value = value
                .checked_mul(10)
                .and_then(|v| v.checked_add(usize::from(c - b'0')))
                .ok_or("PGM header number too large")?;
            at += 1;
        }
        if at == start {
            return Err("malformed PGM header");
        }
        *field = value;
    }
    let [width, height, maxval] = fields;
    if maxval != 255 {
        return Err("only 8-bit PGM (maxval 255) is supported");
    }
    if width == 0 || height == 0 {
        return Err("empty PGM");
    }
    // Exactly one whitespace byte separates the header from the pixels.
    match bytes.get(at) {
        Some(c) if c.is_ascii_whitespace() => at += 1,
        _ => return Err("malformed PGM header"),
    }
    Ok(Header {
        width,
        height,
        offset: at,
    })
}

fn skip_space_and_comments(bytes: &[u8], mut at: usize) -> usize {
    loop {
        match bytes.get(at) {
            Some(c) if c.is_ascii_whitespace() => at += 1,
            Some(b'#') => {
                while let Some(&c) = bytes.get(at) {
                    at += 1;
                    if c == b'\n' {
                        break;
                    }
                }
            }
            _ => return at,
        }
    }
}
