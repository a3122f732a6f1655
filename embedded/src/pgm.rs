//! Binary PGM (`P5`, 8-bit) read from the host through semihosting, a row at a time (the way a
//! camera's DMA delivers a frame: the firmware never holds the whole frame).

use core::ffi::CStr;

use semihosting::fs::File;
use semihosting::io::{Read as _, Seek as _, SeekFrom};

use crate::buffers::{MAX_HEIGHT, MAX_WIDTH};

/// Bytes read for the header: `P5`, two sizes, `255` and a few comment bytes.
const HEADER_BYTES: usize = 128;

/// An open PGM whose header was accepted, positioned at its first pixel row.
pub struct Rows {
    file: File,
    /// Width in pixels.
    pub width: usize,
    /// Height in pixels.
    pub height: usize,
}

impl Rows {
    /// Opens the file at `path` and parses its header.
    pub fn open(path: &CStr) -> Result<Self, &'static str> {
        let mut file = File::open(path).map_err(|_| "cannot open the image")?;
        let mut head = [0u8; HEADER_BYTES];
        let len = read_full(&mut file, &mut head)?;
        let header = parse_header(&head[..len])?;
        if header.width > MAX_WIDTH || header.height > MAX_HEIGHT {
            return Err("image larger than 320x240");
        }
        file.seek(SeekFrom::Start(header.offset as u64))
            .map_err(|_| "cannot seek to the pixels")?;
        Ok(Self {
            file,
            width: header.width,
            height: header.height,
        })
    }

    /// Reads the next row into `row` (`width` bytes).
    pub fn read_row(&mut self, row: &mut [u8]) -> Result<(), &'static str> {
        let row = row.get_mut(..self.width).ok_or("row buffer too short")?;
        if read_full(&mut self.file, row)? != row.len() {
            return Err("truncated PGM: fewer pixels than width x height");
        }
        Ok(())
    }
}

/// Reads until `buf` is full or the file ends; returns the bytes read.
fn read_full(file: &mut File, buf: &mut [u8]) -> Result<usize, &'static str> {
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(_) => return Err("cannot read the image"),
        }
    }
    Ok(filled)
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
