//! Decimal output without `core::fmt` (its float formatting alone would take a good part of a
//! small part's flash): integers, and `f32` values rounded to 3 decimals exactly as Rust's
//! `{:.3}` rounds them (the exact binary value, ties to even), so the host can compare text.

/// One output line, built in a fixed buffer.
pub struct Line {
    buf: [u8; 96],
    len: usize,
}

impl Line {
    /// An empty line.
    pub fn new() -> Self {
        Self {
            buf: [0; 96],
            len: 0,
        }
    }

    /// The bytes written so far.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    /// Appends one byte (dropped when the line is full).
    pub fn byte(&mut self, b: u8) {
        if let Some(slot) = self.buf.get_mut(self.len) {
            *slot = b;
            self.len += 1;
        }
    }

    /// Appends bytes.
    pub fn bytes(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.byte(b);
        }
    }

    /// Appends `n` in decimal.
    pub fn unsigned(&mut self, mut n: u64) {
        let mut digits = [0u8; 20];
        let mut count = 0;
        loop {
            digits[count] = b'0' + (n % 10) as u8;
            count += 1;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        for &d in digits[..count].iter().rev() {
            self.byte(d);
        }
    }

    /// Appends `v` with exactly 3 decimals (`nan`/`inf` spelled out).
    pub fn fixed3(&mut self, v: f32) {
        let bits = v.to_bits();
        let negative = bits >> 31 == 1;
        let exponent = ((bits >> 23) & 0xff) as i32;
        let fraction = bits & 0x7f_ffff;
        if exponent == 0xff {
            self.bytes(if fraction != 0 {
                b"NaN"
            } else if negative {
                b"-inf"
            } else {
                b"inf"
            });
            return;
        }
        // v = mantissa * 2^shift exactly.
        let (mantissa, shift) = if exponent == 0 {
            (u64::from(fraction), -149)
        } else {
            (u64::from(fraction | 0x80_0000), exponent - 150)
        };
        let thousandths = round_thousandths(mantissa, shift);
        if negative && thousandths != 0 {
            self.byte(b'-');
        } else if negative {
            // Rust prints "-0.000" for negative zero and tiny negatives.
            self.byte(b'-');
        }
        self.unsigned(thousandths / 1000);
        self.byte(b'.');
        let frac = thousandths % 1000;
        self.byte(b'0' + (frac / 100) as u8);
        self.byte(b'0' + (frac / 10 % 10) as u8);
        self.byte(b'0' + (frac % 10) as u8);
    }
}

/// `round(mantissa * 2^shift * 1000)`, ties to even, for `mantissa < 2^24`.
fn round_thousandths(mantissa: u64, shift: i32) -> u64 {
    let scaled = u128::from(mantissa) * 1000;
    if shift >= 0 {
        // |v| >= 2^23 here at most 2^128 * 1000: saturate far beyond any keypoint coordinate.
        return u64::try_from(scaled << shift.min(64)).unwrap_or(u64::MAX);
    }
    let k = (-shift) as u32;
    if k >= 100 {
        return 0; // below 2^-76: rounds to 0.000
    }
    let quotient = scaled >> k;
    let remainder = scaled & ((1u128 << k) - 1);
    let half = 1u128 << (k - 1);
    let round_up = remainder > half || (remainder == half && quotient & 1 == 1);
    (quotient + u128::from(round_up)) as u64
}
