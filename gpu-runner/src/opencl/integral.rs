//! The exact `u32` integral image on the device: surf.cl's `integral_band_sums` and
//! `integral_bands` kernels, their work-group sizes and their scratch buffer. SURF samples the
//! integral image for its box filters, Harris describes its corners from it.

use ocl::flags::MemFlags;
use ocl::{Buffer, Event, Kernel, Program};

use super::enqueue::launch_after;
use super::error::OpenClError;
use super::frame::{Events, FrameIo};
use super::gpu::Gpu;

/// Rows per band of surf.cl's integral kernels: one work-group of `integral_bands` per band, so
/// bands of few rows give a frame enough groups to fill a large GPU (1920x1080 is 270 groups at
/// 4 rows, 68 at 16: fewer than an H100's 132 multiprocessors; docs/BENCHMARKS.md).
const INTEGRAL_BAND: usize = 4;
/// Adjacent columns per work-item of `integral_bands` (8: its vector types).
const INTEGRAL_COLS: usize = 8;
/// Work-items per segment of `integral_bands`' row scans.
const INTEGRAL_SEG: usize = 16;
/// The three above as `-D` options of every program built from surf.cl (their one definition).
pub(crate) const INTEGRAL_DEFINES: [(&str, usize); 3] = [
    ("INTEGRAL_BAND", INTEGRAL_BAND),
    ("INTEGRAL_COLS", INTEGRAL_COLS),
    ("INTEGRAL_SEG", INTEGRAL_SEG),
];
/// Columns per work-group of `integral_band_sums`: 32 bytes of each row, one memory sector.
const STRIP_COLS: usize = 32;
/// Chunks of bands `integral_band_sums` cuts a frame into at most: `integral_bands` adds one
/// total per chunk above its band to each column it starts, so more chunks cost loads there,
/// fewer cost longer columns per work-item in `integral_band_sums`.
const MAX_CHUNKS: usize = 16;

/// Bands of a frame of `h` rows.
fn band_count(h: usize) -> usize {
    h.div_ceil(INTEGRAL_BAND)
}

/// Bands per work-item of `integral_band_sums` for a frame of `h` rows, `segs` work-items per
/// column: the fewest that keep the chunks (`segs` times this many bands) at [`MAX_CHUNKS`].
fn integral_item_bands(h: usize, segs: usize) -> usize {
    band_count(h).div_ceil(MAX_CHUNKS * segs).max(1)
}

/// Words of `band_sums` a frame of `w x h` pixels uses: a row of `w` per band, then one per
/// chunk (at most [`MAX_CHUNKS`], whatever the work-group size).
fn integral_band_sum_words(w: usize, h: usize) -> usize {
    let bands = band_count(h);
    (bands + bands.min(MAX_CHUNKS)) * w
}

/// Words of local memory `integral_bands` uses with `lsz` work-items: surf.cl's layout, the row
/// scans (a stride of 1 mod 32 words per row, then the segment offsets) or the two staged
/// output rows (a pad word per 32), whichever is larger.
fn integral_bands_local_words(lsz: usize) -> usize {
    let stride = lsz.next_multiple_of(32) + 1;
    let scan = INTEGRAL_BAND * (stride + lsz.div_ceil(INTEGRAL_SEG) + 1);
    let row = lsz * INTEGRAL_COLS;
    scan.max(2 * (row + row / 32))
}

/// surf.cl's integral image kernels (`integral_band_sums`, `integral_bands`) over a detector's
/// image and integral buffers, with their work-group sizes: SURF samples the integral image,
/// Harris describes its corners from it.
#[derive(Debug)]
pub(crate) struct IntegralKernels {
    sums: Kernel,
    bands: Kernel,
    sums_local: usize,
    bands_local: usize,
    /// Columns per work-group of `integral_band_sums` (the rest of the group splits the bands).
    strip_cols: usize,
    /// What `integral_band_sums` leaves for `integral_bands` (per band the column sums over its
    /// chunk above it, then every chunk's totals), sized for the largest frame.
    band_sums: Buffer<u32>,
}

impl IntegralKernels {
    /// `wanted`: work-items per group, `None` for the defaults (256 for the band sums; for the
    /// bands 256, or fewer when 8 columns per work-item cover the widest frame with fewer).
    /// `integral_band_sums` also clears the result header, so no separate fill is needed.
    pub(crate) fn new(
        gpu: &Gpu,
        program: &Program,
        io: &FrameIo,
        integral: &Buffer<u32>,
        wanted: Option<usize>,
    ) -> Result<Self, OpenClError> {
        let (mw, mh) = (io.max_width, io.max_height);
        let band_sums = gpu.buffer::<u32>(
            "integral band sums",
            integral_band_sum_words(mw, mh),
            MemFlags::new().read_write(),
        )?;
        let (w0, h0) = (mw as i32, mh as i32);
        let build_sums = |lsz: usize| {
            let strip = STRIP_COLS.min(lsz);
            gpu.kernel(program, "integral_band_sums")
                .arg(&io.image)
                .arg(w0)
                .arg(h0)
                .arg(strip as i32)
                .arg(integral_item_bands(mh, lsz / strip) as i32)
                .arg(&band_sums)
                .arg(&io.result)
                .arg_local::<u32>(lsz)
                .build()
                .map_err(OpenClError::runtime("kernel integral_band_sums"))
        };
        // Both keep local memory in proportion to their work-group: a kernel whose work-group
        // size the device or the kernel lowers is rebuilt with the smaller local buffer.
        let (sums, sums_local) =
            gpu.kernel_fitting(gpu.fit_local(wanted.unwrap_or(256), 1), build_sums)?;
        let strip_cols = STRIP_COLS.min(sums_local);
        let segs = sums_local / strip_cols;
        let build_bands = |lsz: usize| {
            gpu.kernel(program, "integral_bands")
                .arg(&io.image)
                .arg(integral)
                .arg(w0)
                .arg(h0)
                .arg((segs * integral_item_bands(mh, segs)) as i32)
                .arg(&band_sums)
                .arg_local::<u32>(integral_bands_local_words(lsz))
                .build()
                .map_err(OpenClError::runtime("kernel integral_bands"))
        };
        // Up to 256 work-items, as many as cover the widest frame in one chunk of columns:
        // work-items past the frame's columns would still take part in every scan.
        let bands_want =
            wanted.unwrap_or_else(|| mw.div_ceil(INTEGRAL_COLS).next_multiple_of(32).min(256));
        let per_item = integral_bands_local_words(bands_want).div_ceil(bands_want);
        let (bands, bands_local) =
            gpu.kernel_fitting(gpu.fit_local(bands_want, per_item), build_bands)?;
        Ok(Self {
            sums,
            bands,
            sums_local,
            bands_local,
            strip_cols,
            band_sums,
        })
    }

    /// Device memory of the band sums, bytes.
    pub(crate) fn device_bytes(&self) -> u64 {
        4 * self.band_sums.len() as u64
    }

    /// Bands per work-item of `integral_band_sums` and chunks of bands for a frame of `h` rows.
    fn chunking(&self, h: usize) -> (usize, usize) {
        let segs = self.sums_local / self.strip_cols;
        let per_item = integral_item_bands(h, segs);
        (per_item, band_count(h).div_ceil(segs * per_item))
    }

    /// Points the kernels at a `w x h` frame in `image`.
    pub(crate) fn set_frame(&self, image: &Buffer<u8>, w: i32, h: i32) -> Result<(), OpenClError> {
        let (Ok(wu), Ok(hu)) = (usize::try_from(w), usize::try_from(h)) else {
            return Err(OpenClError::Unsupported(format!("a {w}x{h} frame")));
        };
        let (per_item, chunks) = self.chunking(hu);
        // The rows of band sums a frame takes follow the work-group size too, not only the
        // frame size that `FrameIo::check_size` bounds: no launch may write past them.
        if (band_count(hu) + chunks) * wu > self.band_sums.len() {
            return Err(OpenClError::Unsupported(format!(
                "a {w}x{h} frame's integral band sums exceed their {}-word buffer",
                self.band_sums.len()
            )));
        }
        let chunk_bands = (self.sums_local / self.strip_cols) * per_item;
        self.sums
            .set_arg(0, image)
            .and_then(|_| self.sums.set_arg(1, w))
            .and_then(|_| self.sums.set_arg(2, h))
            .and_then(|_| self.sums.set_arg(4, per_item as i32))
            .and_then(|_| self.bands.set_arg(0, image))
            .and_then(|_| self.bands.set_arg(2, w))
            .and_then(|_| self.bands.set_arg(3, h))
            .and_then(|_| self.bands.set_arg(4, chunk_bands as i32))
            .map_err(OpenClError::runtime("set kernel arguments"))
    }

    /// Enqueues both passes for a `w x h` frame (the one [`Self::set_frame`] last pointed them
    /// at); the first waits for `wait`.
    pub(crate) fn enqueue(
        &self,
        w: usize,
        h: usize,
        wait: &[Event],
        events: &mut Events,
    ) -> Result<(), OpenClError> {
        let bands = band_count(h);
        let (_, chunks) = self.chunking(h);
        let mut ev = Event::empty();
        launch_after(
            &self.sums,
            w.div_ceil(self.strip_cols) * chunks * self.sums_local,
            self.sums_local,
            wait,
            &mut ev,
        )?;
        events.push(("integral_band_sums", ev));
        let mut ev = Event::empty();
        launch_after(
            &self.bands,
            bands * self.bands_local,
            self.bands_local,
            &[],
            &mut ev,
        )?;
        events.push(("integral_bands", ev));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_band_sums_of_any_smaller_frame_fit_the_buffer() {
        let (mw, mh) = (1028, 16384);
        let words = integral_band_sum_words(mw, mh);
        for segs in [1, 2, 3, 8, 16, 32, 1024] {
            for h in (1..=mh).step_by(7).chain([mh]) {
                let bands = band_count(h);
                let chunk = segs * integral_item_bands(h, segs);
                let chunks = bands.div_ceil(chunk);
                assert!(
                    chunks <= MAX_CHUNKS.min(bands),
                    "h {h} segs {segs}: {chunks}"
                );
                assert!((bands + chunks) * mw <= words, "h {h} segs {segs}");
            }
        }
    }
}
