//! The legend: a few coloured text lines on a darkened band in the bottom-left corner, in
//! `embedded-graphics`' built-in 6x9 bitmap font (no font file), enlarged to suit the picture.

use core::convert::Infallible;
use core::fmt::Write;

use embedded_graphics::mono_font::{MonoTextStyle, ascii::FONT_6X9};
use embedded_graphics::pixelcolor::Rgb888;
use embedded_graphics::prelude::{DrawTarget, OriginDimensions, Point, Size};
use embedded_graphics::primitives::Rectangle;
use embedded_graphics::text::{Baseline, Text};
use embedded_graphics::{Drawable, Pixel};
use image::Rgb;

use crate::canvas::{Canvas, rgb888};

/// Most lines a legend holds.
pub const MAX_LINES: usize = 4;
/// Longest legend line, in characters (longer text is cut).
pub const MAX_CHARS: usize = 96;

/// Width of one character cell of the font, in font pixels.
const CELL_W: i64 = 6;
/// Height of one text line, in font pixels: the font's 9 rows hold the gap between lines.
const CELL_H: i64 = 9;
/// Space around the text inside the band, in picture pixels.
const MARGIN: i64 = 4;

/// The lines of a legend, each with its colour; built on the stack.
#[derive(Debug, Default, Clone)]
pub struct Legend {
    lines: heapless::Vec<(heapless::String<MAX_CHARS>, Rgb<u8>), MAX_LINES>,
}

impl Legend {
    /// An empty legend.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a line (`format_args!` text, cut at [`MAX_CHARS`]); a line past [`MAX_LINES`] is
    /// left out.
    pub fn push(&mut self, text: core::fmt::Arguments<'_>, colour: Rgb<u8>) {
        let mut line = heapless::String::new();
        // A full line is cut short: the error only says the text did not fit.
        let _ = line.write_fmt(text);
        let _ = self.lines.push((line, colour));
    }

    /// The lines and their colours.
    pub fn lines(&self) -> impl Iterator<Item = (&str, Rgb<u8>)> {
        self.lines.iter().map(|(t, c)| (t.as_str(), *c))
    }
}

/// A draw target that paints each pixel as a `scale x scale` square at `origin + scale * p`.
struct Scaled<'c, 'a> {
    canvas: &'c mut Canvas<'a>,
    origin: Point,
    scale: i32,
}

impl OriginDimensions for Scaled<'_, '_> {
    fn size(&self) -> Size {
        self.canvas.size() / self.scale.max(1) as u32
    }
}

impl DrawTarget for Scaled<'_, '_> {
    type Color = Rgb888;
    type Error = Infallible;

    fn draw_iter<I>(&mut self, pixels: I) -> Result<(), Self::Error>
    where
        I: IntoIterator<Item = Pixel<Self::Color>>,
    {
        let side = Size::new_equal(self.scale as u32);
        for Pixel(p, c) in pixels {
            let square = Rectangle::new(self.origin + p * self.scale, side);
            self.canvas.fill_solid(&square, c)?;
        }
        Ok(())
    }
}

/// Draws `legend` in the bottom-left corner on a band darkened to a quarter, at the largest
/// font scale (3, 2 or 1) that fits the width and a third of the height; nothing when even
/// scale 1 does not fit.
pub fn draw_legend(canvas: &mut Canvas<'_>, legend: &Legend) {
    let (w, h) = (canvas.width() as i64, canvas.height() as i64);
    let longest = legend.lines().map(|(t, _)| t.len()).max().unwrap_or(0) as i64;
    let rows = legend.lines.len() as i64;
    let fits = |scale: i64| {
        longest * CELL_W * scale + 2 * MARGIN <= w && rows * CELL_H * scale + 2 * MARGIN <= h / 3
    };
    let Some(scale) = (1..=3).rev().find(|&s| fits(s)) else {
        return;
    };
    let band_w = longest * CELL_W * scale + 2 * MARGIN;
    let top = h - (rows * CELL_H * scale + 2 * MARGIN);
    canvas.darken((0, top), (band_w, h), 4);
    for (i, (text, colour)) in legend.lines().enumerate() {
        let y = top + MARGIN + i as i64 * CELL_H * scale;
        // In i32: inside the picture, whose sides are u32 and fit (w, h are of a drawn picture).
        let mut target = Scaled {
            canvas,
            origin: Point::new(MARGIN as i32, y as i32),
            scale: scale as i32,
        };
        let style = MonoTextStyle::new(&FONT_6X9, rgb888(colour));
        let Ok(_) =
            Text::with_baseline(text, Point::zero(), style, Baseline::Top).draw(&mut target);
    }
}
