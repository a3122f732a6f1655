//! [`Canvas`]: an rgb8 pixel buffer borrowed as an `embedded-graphics` draw target, clipped to
//! the picture, and the two primitives every picture uses ([`line`], [`circle`]).

use core::convert::Infallible;

use embedded_graphics::pixelcolor::Rgb888;
use embedded_graphics::prelude::{DrawTarget, OriginDimensions, Point, Primitive, RgbColor, Size};
use embedded_graphics::primitives::{Circle, Line, PrimitiveStyle, Rectangle};
use embedded_graphics::{Drawable, Pixel};
use image::{Rgb, RgbImage};

/// Coordinates beyond this many pixels from the picture are clipped before rasterising, so that
/// absurd coordinates (a keypoint at 1e9) cost no more than a line across the picture.
const CLIP_MARGIN: f64 = 4.0;

/// An rgb8 picture (rows top to bottom, 3 bytes a pixel, no padding) being drawn on. Every
/// drawing call is clipped to the picture: nothing can index out of bounds.
pub struct Canvas<'a> {
    rgb: &'a mut [u8],
    width: usize,
    height: usize,
}

impl<'a> Canvas<'a> {
    /// A canvas of `width x height` over `rgb`; when `rgb` holds fewer rows, only the rows it
    /// holds are drawn on.
    pub fn new(rgb: &'a mut [u8], width: usize, height: usize) -> Self {
        let rows = width
            .checked_mul(3)
            .and_then(|row| rgb.len().checked_div(row))
            .unwrap_or(0);
        Canvas {
            rgb,
            width,
            height: height.min(rows),
        }
    }

    /// A canvas over the whole of `img`.
    pub fn from_image(img: &'a mut RgbImage) -> Self {
        let (width, height) = (img.width() as usize, img.height() as usize);
        Canvas::new(img, width, height)
    }

    /// Width in pixels.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Height in pixels (the rows the buffer holds).
    pub fn height(&self) -> usize {
        self.height
    }

    /// The byte range of the pixels `x0..x1` of row `y`, clipped; `None` when nothing is left.
    fn span(&self, x0: i64, x1: i64, y: i64) -> Option<core::ops::Range<usize>> {
        let (w, h) = (self.width as i64, self.height as i64);
        let (x0, x1) = (x0.max(0), x1.min(w));
        if y < 0 || y >= h || x0 >= x1 {
            return None;
        }
        // In range: 0 <= x0 < x1 <= w and 0 <= y < h, and the buffer holds h rows of w pixels.
        let row = y as usize * self.width * 3;
        Some(row + x0 as usize * 3..row + x1 as usize * 3)
    }

    /// Fills the pixels `x0..x1` of row `y` (clipped) with `colour`.
    fn fill_span(&mut self, x0: i64, x1: i64, y: i64, colour: [u8; 3]) {
        if let Some(range) = self.span(x0, x1, y)
            && let Some(bytes) = self.rgb.get_mut(range)
        {
            for px in bytes.chunks_exact_mut(3) {
                px.copy_from_slice(&colour);
            }
        }
    }

    /// The pixel at `(x, y)`, `None` outside the picture.
    pub fn pixel(&self, x: i64, y: i64) -> Option<Rgb<u8>> {
        let range = self.span(x, x + 1, y)?;
        let px = self.rgb.get(range)?;
        Some(Rgb([px[0], px[1], px[2]]))
    }

    /// Divides every channel of the pixels in `[x0, x1) x [y0, y1)` (clipped) by `divisor`: the
    /// darkened band under the legend.
    pub fn darken(&mut self, (x0, y0): (i64, i64), (x1, y1): (i64, i64), divisor: u8) {
        let divisor = divisor.max(1);
        for y in y0.max(0)..y1.min(self.height as i64) {
            if let Some(range) = self.span(x0, x1, y)
                && let Some(bytes) = self.rgb.get_mut(range)
            {
                bytes.iter_mut().for_each(|v| *v /= divisor);
            }
        }
    }
}

/// The `embedded-graphics` colour of an `image` colour.
pub fn rgb888(colour: Rgb<u8>) -> Rgb888 {
    let [r, g, b] = colour.0;
    Rgb888::new(r, g, b)
}

impl OriginDimensions for Canvas<'_> {
    fn size(&self) -> Size {
        let side = |v: usize| u32::try_from(v).unwrap_or(u32::MAX);
        Size::new(side(self.width), side(self.height))
    }
}

impl DrawTarget for Canvas<'_> {
    type Color = Rgb888;
    type Error = Infallible;

    fn draw_iter<I>(&mut self, pixels: I) -> Result<(), Self::Error>
    where
        I: IntoIterator<Item = Pixel<Self::Color>>,
    {
        for Pixel(p, c) in pixels {
            let (x, y) = (i64::from(p.x), i64::from(p.y));
            self.fill_span(x, x + 1, y, [c.r(), c.g(), c.b()]);
        }
        Ok(())
    }

    fn fill_solid(&mut self, area: &Rectangle, color: Self::Color) -> Result<(), Self::Error> {
        let (x0, y0) = (i64::from(area.top_left.x), i64::from(area.top_left.y));
        let (x1, y1) = (
            x0 + i64::from(area.size.width),
            y0 + i64::from(area.size.height),
        );
        for y in y0.max(0)..y1.min(self.height as i64) {
            self.fill_span(x0, x1, y, [color.r(), color.g(), color.b()]);
        }
        Ok(())
    }
}

/// Rounds a float coordinate to a pixel index; non-finite values go far outside any picture.
pub fn px(v: f32) -> i64 {
    if v.is_finite() {
        (v.round() as i64).clamp(-1 << 30, 1 << 30)
    } else {
        -1 << 30
    }
}

/// The part of the segment `a`-`b` inside `[lo, hi]` on both axes (Liang-Barsky), `None` when
/// it misses that box.
fn clip_segment(a: (i64, i64), b: (i64, i64), lo: f64, hi: (f64, f64)) -> Option<(Point, Point)> {
    let (x0, y0) = (a.0 as f64, a.1 as f64);
    let (dx, dy) = (b.0 as f64 - x0, b.1 as f64 - y0);
    let (mut t0, mut t1) = (0.0f64, 1.0f64);
    for (p, q) in [
        (-dx, x0 - lo),
        (dx, hi.0 - x0),
        (-dy, y0 - lo),
        (dy, hi.1 - y0),
    ] {
        if p == 0.0 {
            if q < 0.0 {
                return None;
            }
        } else {
            let r = q / p;
            if p < 0.0 {
                t0 = t0.max(r);
            } else {
                t1 = t1.min(r);
            }
        }
    }
    if t0 > t1 {
        return None;
    }
    let at = |t: f64| Point::new((x0 + t * dx).round() as i32, (y0 + t * dy).round() as i32);
    Some((at(t0), at(t1)))
}

/// Draws a 1-pixel line from `from` to `to` (Bresenham, both ends included), clipped to the
/// picture; a segment reaching far outside is first cut to the picture (plus a margin).
pub fn line(canvas: &mut Canvas<'_>, from: (i64, i64), to: (i64, i64), colour: Rgb<u8>) {
    let hi = (
        canvas.width as f64 + CLIP_MARGIN,
        canvas.height as f64 + CLIP_MARGIN,
    );
    if let Some((a, b)) = clip_segment(from, to, -CLIP_MARGIN, hi) {
        let style = PrimitiveStyle::with_stroke(rgb888(colour), 1);
        let Ok(()) = Line::new(a, b).into_styled(style).draw(canvas);
    }
}

/// Draws a 1-pixel circle outline of `radius` around `centre`, clipped to the picture; nothing
/// when it lies wholly outside.
pub fn circle(canvas: &mut Canvas<'_>, centre: (i64, i64), radius: i64, colour: Rgb<u8>) {
    let radius = radius.clamp(0, 1 << 20);
    let (cx, cy) = centre;
    let outside = cx + radius < 0
        || cy + radius < 0
        || cx - radius >= canvas.width as i64
        || cy - radius >= canvas.height as i64;
    if outside {
        return;
    }
    // In i32: the centre is within 2^20 of the picture (tested above) and radius <= 2^20.
    let centre = Point::new(cx as i32, cy as i32);
    let style = PrimitiveStyle::with_stroke(rgb888(colour), 1);
    let Ok(()) = Circle::with_center(centre, 2 * radius as u32 + 1)
        .into_styled(style)
        .draw(canvas);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::colours::{BLUE, RED};

    fn count(img: &RgbImage, colour: Rgb<u8>) -> usize {
        img.pixels().filter(|p| **p == colour).count()
    }

    #[test]
    fn line_hits_both_ends_and_has_chebyshev_length() {
        for &(a, b) in &[
            ((0, 0), (9, 3)),
            ((9, 9), (0, 2)),
            ((3, 0), (3, 9)),
            ((5, 5), (5, 5)),
        ] {
            let mut img = RgbImage::new(10, 10);
            line(&mut Canvas::from_image(&mut img), a, b, RED);
            assert_eq!(*img.get_pixel(a.0 as u32, a.1 as u32), RED);
            assert_eq!(*img.get_pixel(b.0 as u32, b.1 as u32), RED);
            let len = (b.0 - a.0).abs().max((b.1 - a.1).abs()) as usize + 1;
            assert_eq!(count(&img, RED), len);
        }
    }

    #[test]
    fn circle_points_are_near_the_radius_and_clipping_is_safe() {
        let mut img = RgbImage::new(41, 41);
        circle(&mut Canvas::from_image(&mut img), (20, 20), 10, BLUE);
        let mut n = 0;
        for (x, y, p) in img.enumerate_pixels() {
            if *p == BLUE {
                n += 1;
                let d = (((x as f64) - 20.0).powi(2) + ((y as f64) - 20.0).powi(2)).sqrt();
                assert!((d - 10.0).abs() < 0.75, "pixel at distance {d}");
            }
        }
        assert!(n > 50);
        // Entirely or partly outside: no panic.
        let mut canvas = Canvas::from_image(&mut img);
        circle(&mut canvas, (-100, 5), 10, RED);
        circle(&mut canvas, (40, 40), 500, RED);
        line(&mut canvas, (-1000, -1000), (1000, 1000), RED);
        line(&mut canvas, (-1 << 30, 1 << 30), (1 << 30, -1 << 30), RED);
        assert_eq!(
            *img.get_pixel(0, 0),
            RED,
            "the diagonal crosses the picture"
        );
    }

    #[test]
    fn a_short_buffer_is_drawn_on_only_where_it_has_rows() {
        let mut rgb = vec![0u8; 10 * 3 * 2];
        let mut canvas = Canvas::new(&mut rgb, 10, 5);
        assert_eq!(canvas.height(), 2);
        line(&mut canvas, (0, 0), (9, 4), RED);
        assert_eq!(canvas.pixel(0, 0), Some(RED));
        assert_eq!(canvas.pixel(0, 3), None);
    }
}
