//! Loading input files: images (PNG, PGM/PPM, JPEG) as 8-bit luminance, and homography files.
//!
//! Images are checked against the core's size limits
//! ([`surfcl_core::image::check_dimensions`]) from the header *before* any pixel is decoded, and
//! the decoder runs under matching [`image::Limits`], so a hostile header cannot make us allocate
//! gigabytes. Colour is converted here (not by the `image` crate, whose luma uses other weights)
//! with the coefficients of the design, `Y = 0.299 R + 0.587 G + 0.114 B`, rounded to nearest;
//! the arithmetic is integer (`(299 R + 587 G + 114 B + 500) / 1000`), so grey pixels stay exactly
//! as they are. 16-bit images are first reduced to 8 bits by the `image` crate (rounded); alpha is
//! ignored.

use std::io::Cursor;
use std::path::{Path, PathBuf};

use image::{DynamicImage, ImageReader, Limits};
use surfcl_core::homography::Homography;
use surfcl_core::image::check_dimensions;

use surfcl_gpu::Error;

/// The images loaded here: the runtime's owned 8-bit grey image.
pub use surfcl_gpu::OwnedGray;

pub use surfcl_core::image::luminance;

/// Converts a decoded image of any colour type to 8-bit luminance.
pub fn to_luminance(image: DynamicImage) -> OwnedGray {
    let (width, height) = (image.width() as usize, image.height() as usize);
    let pixels = match image {
        DynamicImage::ImageLuma8(buffer) => buffer.into_raw(),
        // Grey with alpha, or 16-bit grey: only the bit depth / alpha changes, no colour weights.
        gray @ (DynamicImage::ImageLumaA8(_)
        | DynamicImage::ImageLuma16(_)
        | DynamicImage::ImageLumaA16(_)) => gray.to_luma8().into_raw(),
        colour => colour
            .to_rgb8()
            .pixels()
            .map(|p| luminance(p[0], p[1], p[2]))
            .collect(),
    };
    OwnedGray {
        width,
        height,
        pixels,
    }
}

/// Allocation allowed to the header pass (the decoder reads every chunk before the pixel data,
/// iCCP profiles and text included; real ICC profiles are well under a megabyte).
pub const HEADER_PASS_ALLOC: u64 = 16 << 20;

/// Allocation allowed to the decoder beyond the decoded image itself (rows, chunk buffers).
pub const DECODE_SLACK_ALLOC: u64 = 16 << 20;

/// Decoding limits matching the core's: no side above `MAX_DIMENSION`, and at most `max_alloc`
/// bytes. Every pass of the decoder runs under such limits, the header pass included: the PNG
/// decoder inflates compressed ancillary chunks (iCCP, zTXt) while it looks for the header, and
/// without a limit a zlib bomb in such a chunk would take hundreds of megabytes.
fn decode_limits(max_alloc: u64) -> Limits {
    let mut limits = Limits::default();
    let side = surfcl_core::image::MAX_DIMENSION as u32;
    limits.max_image_width = Some(side);
    limits.max_image_height = Some(side);
    limits.max_alloc = Some(max_alloc);
    limits
}

/// The largest decoder allocation for any accepted image: the widest decoded form (RGBA, 16
/// bits per channel) of `MAX_PIXELS` pixels plus [`DECODE_SLACK_ALLOC`], about 145 MiB.
pub const MAX_DECODE_ALLOC: u64 = surfcl_core::image::MAX_PIXELS as u64 * 8 + DECODE_SLACK_ALLOC;

/// Loads an image file (PNG, PGM/PPM, JPEG; the format is detected from the content) as 8-bit
/// luminance. Errors name the file and say what is wrong with it: missing, not a regular file,
/// empty, not an image, too large, truncated or corrupt.
pub fn load_gray(path: &Path) -> Result<OwnedGray, Error> {
    let bytes = read_capped(path, MAX_IMAGE_FILE_BYTES, "an image")?;
    decode_gray(&bytes, path)
}

/// The image argument that means standard input.
pub const STDIN_ARG: &str = "-";

/// The name standard input has in error messages.
pub const STDIN_NAME: &str = "<stdin>";

/// Loads an image as [`load_gray`] does, or from standard input when `path` is `-`
/// ([`STDIN_ARG`]): the bytes are read to their end (at most [`MAX_IMAGE_FILE_BYTES`]) and
/// decoded with the same checks, errors naming `<stdin>`.
pub fn load_gray_or_stdin(path: &Path) -> Result<OwnedGray, Error> {
    if path.as_os_str() != STDIN_ARG {
        return load_gray(path);
    }
    let name = Path::new(STDIN_NAME);
    let stdin = std::io::stdin().lock();
    let bytes = read_stream_capped(stdin, name, MAX_IMAGE_FILE_BYTES, STDIN_IMAGE)?;
    decode_gray(&bytes, name)
}

/// What [`read_stream_capped`] reads from standard input, and what it should hold.
const STDIN_IMAGE: (&str, &str) = ("the input", "an image");

/// Reads `reader` (called `name` in errors) to its end, failing when there are more than `limit`
/// bytes: `(source, what)` say what was read and what it should hold in the message ("`source` is
/// larger than the `limit` bytes accepted for `what`").
fn read_stream_capped(
    reader: impl std::io::Read,
    name: &Path,
    limit: u64,
    (source, what): (&str, &str),
) -> Result<Vec<u8>, Error> {
    use std::io::Read;
    let mut bytes = Vec::new();
    reader
        .take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io(name, e))?;
    if bytes.len() as u64 > limit {
        return Err(Error::Decode {
            path: name.to_path_buf(),
            message: format!("{source} is larger than the {limit} bytes accepted for {what}"),
        });
    }
    Ok(bytes)
}

/// Largest image file read (an uncompressed PPM of the largest image the core accepts is
/// `3 * MAX_PIXELS` bytes, about 48 MiB; 16-bit PPM twice that).
pub const MAX_IMAGE_FILE_BYTES: u64 = 6 * surfcl_core::image::MAX_PIXELS as u64 + (1 << 20);

/// Largest homography file read: three rows of three numbers need well under a kilobyte.
pub const MAX_HOMOGRAPHY_FILE_BYTES: u64 = 64 << 10;

/// Refuses anything but a regular file (after following symbolic links) *before* it is opened:
/// opening a FIFO for reading blocks until a writer comes, a directory cannot be read, and a
/// device can be endless.
pub fn require_regular_file(path: &Path) -> Result<(), Error> {
    let meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
    let kind = meta.file_type();
    if kind.is_file() {
        return Ok(());
    }
    use std::os::unix::fs::FileTypeExt;
    let what = if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO (named pipe)"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else {
        "not a regular file"
    };
    Err(Error::io(
        path,
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{what}, not a regular file"),
        ),
    ))
}

/// Reads at most `limit` bytes of a regular file and fails if there is more, so that a huge
/// file is never read into memory whole; `what` names the expected content in the message.
fn read_capped(path: &Path, limit: u64, what: &str) -> Result<Vec<u8>, Error> {
    require_regular_file(path)?;
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    // The path may have been replaced between the check and the open: check what was opened.
    let opened = file.metadata().map_err(|e| Error::io(path, e))?;
    if !opened.file_type().is_file() {
        return Err(Error::io(
            path,
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a regular file"),
        ));
    }
    read_stream_capped(file, path, limit, ("the file", what))
}

/// A decoder error in words a user can act on.
fn describe_image_error(e: image::ImageError) -> String {
    match e {
        image::ImageError::IoError(io) if io.kind() == std::io::ErrorKind::UnexpectedEof => {
            "the file is truncated: it ends before all the pixels its header declares".into()
        }
        image::ImageError::Limits(l) => match l.kind() {
            image::error::LimitErrorKind::DimensionError => format!(
                "the image is too large: more than {} pixels on a side",
                surfcl_core::image::MAX_DIMENSION
            ),
            _ => format!("decoding would need more memory than the decoder limit allows ({l})"),
        },
        other => other.to_string(),
    }
}

/// Decodes an in-memory image file; `path` is only used in error messages.
pub fn decode_gray(bytes: &[u8], path: &Path) -> Result<OwnedGray, Error> {
    let decode_error = |message: String| Error::Decode {
        path: path.to_path_buf(),
        message: format!("cannot decode image: {message}"),
    };
    if bytes.is_empty() {
        return Err(decode_error("the file is empty".into()));
    }
    let guessed = |max_alloc: u64| {
        let mut reader = ImageReader::new(Cursor::new(bytes))
            .with_guessed_format()
            .map_err(|e| decode_error(e.to_string()))?;
        reader.limits(decode_limits(max_alloc));
        Ok::<_, Error>(reader)
    };
    let reader = guessed(HEADER_PASS_ALLOC)?;
    if reader.format().is_none() {
        return Err(decode_error(
            "not a supported image format (PNG, PGM/PPM or JPEG expected)".into(),
        ));
    }
    // Header only: reject sizes the core cannot process before the decoder allocates anything.
    let (width, height) = reader
        .into_dimensions()
        .map_err(|e| decode_error(describe_image_error(e)))?;
    check_dimensions(width as usize, height as usize).map_err(|e| decode_error(format!("{e}")))?;
    // The decode pass may allocate what this image needs in its widest form, and a little more.
    let need = u64::from(width) * u64::from(height) * 8 + DECODE_SLACK_ALLOC;
    let image = guessed(need.min(MAX_DECODE_ALLOC))?
        .decode()
        .map_err(|e| decode_error(describe_image_error(e)))?;
    Ok(to_luminance(image))
}

/// Loads a homography file (Oxford format: 3 rows of 3 numbers) with the core parser, which also
/// refuses singular matrices.
pub fn load_homography(path: &Path) -> Result<Homography, Error> {
    let bytes = read_capped(path, MAX_HOMOGRAPHY_FILE_BYTES, "a homography file")?;
    let text = String::from_utf8(bytes).map_err(|_| Error::Decode {
        path: path.to_path_buf(),
        message: "a homography file must be text (3 rows of 3 numbers)".into(),
    })?;
    Homography::parse(&text).map_err(|source| Error::HomographyFile {
        path: PathBuf::from(path),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_over_the_cap_is_refused() {
        let name = Path::new(STDIN_NAME);
        assert_eq!(
            read_stream_capped(&b"abc"[..], name, 3, STDIN_IMAGE).unwrap(),
            b"abc"
        );
        let e = read_stream_capped(&b"abcd"[..], name, 3, STDIN_IMAGE)
            .unwrap_err()
            .to_string();
        assert!(e.contains("<stdin>") && e.contains("larger than"), "{e}");
    }

    #[test]
    fn luminance_weights_and_rounding() {
        assert_eq!(luminance(0, 0, 0), 0);
        assert_eq!(luminance(255, 255, 255), 255);
        for v in 0..=255u8 {
            assert_eq!(luminance(v, v, v), v);
        }
        // 0.299 * 255 = 76.245 -> 76; 0.587 * 255 = 149.685 -> 150; 0.114 * 255 = 29.07 -> 29.
        assert_eq!(luminance(255, 0, 0), 76);
        assert_eq!(luminance(0, 255, 0), 150);
        assert_eq!(luminance(0, 0, 255), 29);
    }

    #[test]
    fn png_round_trip_and_colour_conversion() {
        let mut rgb = image::RgbImage::new(3, 2);
        rgb.put_pixel(0, 0, image::Rgb([255, 0, 0]));
        rgb.put_pixel(2, 1, image::Rgb([10, 20, 30]));
        let mut bytes = Vec::new();
        DynamicImage::ImageRgb8(rgb)
            .write_to(&mut Cursor::new(&mut bytes), image::ImageFormat::Png)
            .unwrap();
        let gray = decode_gray(&bytes, Path::new("x.png")).unwrap();
        assert_eq!((gray.width, gray.height), (3, 2));
        assert_eq!(gray.pixels[0], 76);
        assert_eq!(gray.pixels[5], luminance(10, 20, 30));
        assert_eq!(gray.pixels[1], 0);
    }

    #[test]
    fn sixteen_bit_grey_is_reduced_with_rounding() {
        let img =
            image::ImageBuffer::<image::Luma<u16>, _>::from_raw(2, 1, vec![0u16, 65535]).unwrap();
        let gray = to_luminance(DynamicImage::ImageLuma16(img));
        assert_eq!(gray.pixels, vec![0, 255]);
    }

    #[test]
    fn bad_inputs_give_clear_errors() {
        let path = Path::new("bad.png");
        let msg = |r: Result<OwnedGray, Error>| r.unwrap_err().to_string();
        assert!(msg(decode_gray(b"", path)).contains("empty"));
        assert!(msg(decode_gray(b"hello, I am text\n", path)).contains("not a supported"));
        // A PGM header that declares a size beyond the core's limits is refused before decoding.
        let huge = b"P5\n20000 20000\n255\n\0\0\0";
        assert!(msg(decode_gray(huge, path)).contains("too large"));
        // Truncated PGM: header promises 4x4, body has 3 bytes.
        let short = b"P5\n4 4\n255\n\0\0\0";
        let text = msg(decode_gray(short, path));
        assert!(
            text.contains("bad.png") && text.contains("truncated"),
            "{text}"
        );
        assert!(!text.contains("fill whole buffer"), "{text}");
        let missing = load_gray(Path::new("/nonexistent/surfcl/img.png"));
        assert!(
            missing
                .unwrap_err()
                .to_string()
                .contains("/nonexistent/surfcl/img.png")
        );
    }
}
