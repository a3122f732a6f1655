//! Annotated pictures for `--draw`: keypoints on the input image, and match lines between two
//! images placed side by side. The drawing itself is `surfcl-draw`'s, shared with the ROS 2
//! node's `debug_image`: its crate docs document the colours, the legend and the conventions.
//! This module adds the image files: the picture format follows the file extension
//! ([`picture_format`]): PNG, JPEG or PPM.

use std::path::Path;

use image::{ImageFormat, RgbImage};
use surfcl_core::Keypoint;
pub use surfcl_draw::{
    BLUE, DEFAULT_MATCH_LINES, GREEN, MatchLine, RED, WHITE, YELLOW, evenly_chosen,
    keypoint_colour, keypoint_radius,
};

use crate::io::OwnedGray;
use surfcl_gpu::Error;

/// The CLI's grey image as the drawing crate's borrowed view.
fn view(gray: &OwnedGray) -> surfcl_draw::Gray<'_> {
    surfcl_draw::Gray {
        pixels: &gray.pixels,
        width: gray.width,
        height: gray.height,
    }
}

/// The grey image as RGB (all three channels equal).
pub fn gray_to_rgb(gray: &OwnedGray) -> RgbImage {
    surfcl_draw::gray_to_rgb(view(gray))
}

/// The input image with its keypoints drawn on it, and a legend (`surfcl-draw`'s crate docs).
pub fn keypoint_picture(gray: &OwnedGray, keypoints: &[Keypoint]) -> RgbImage {
    surfcl_draw::keypoint_picture(view(gray), keypoints)
}

/// The two images side by side with at most `limit` of the matches (evenly chosen) and a legend
/// (`surfcl_draw::match_picture`).
pub fn match_picture(
    left: &OwnedGray,
    right: &OwnedGray,
    matches: &[MatchLine],
    limit: usize,
) -> RgbImage {
    surfcl_draw::match_picture(view(left), view(right), matches, limit)
}

/// The extension of `path`, lower case.
fn extension(path: &Path) -> Option<String> {
    path.extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
}

/// The picture format for `path`, from its extension: `.png`, `.jpg`/`.jpeg` or `.ppm`. Any other
/// extension (or none) is refused with a message that lists these.
pub fn picture_format(path: &Path) -> Result<ImageFormat, Error> {
    match extension(path).as_deref() {
        Some("png") => Ok(ImageFormat::Png),
        Some("jpg" | "jpeg") => Ok(ImageFormat::Jpeg),
        Some("ppm") => Ok(ImageFormat::Pnm),
        other => Err(Error::InvalidArgument(format!(
            "{}: cannot tell the picture format from {}: use .png, .jpg/.jpeg or .ppm",
            path.display(),
            other.map_or("a name without extension".to_string(), |e| format!(
                "the extension .{e}"
            ))
        ))),
    }
}

/// Encodes a picture in `format` (`path` only names the file in errors). PNM is written as a
/// binary PPM (`P6`), what the `.ppm` extension promises.
pub fn encode(img: &RgbImage, format: ImageFormat, path: &Path) -> Result<Vec<u8>, Error> {
    use image::ImageEncoder;
    use image::codecs::pnm::{PnmEncoder, PnmSubtype, SampleEncoding};
    let error = |e: image::ImageError| Error::Encode {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    let mut bytes = Vec::new();
    if format == ImageFormat::Pnm {
        PnmEncoder::new(&mut bytes)
            .with_subtype(PnmSubtype::Pixmap(SampleEncoding::Binary))
            .write_image(
                img.as_raw(),
                img.width(),
                img.height(),
                image::ExtendedColorType::Rgb8,
            )
            .map_err(error)?;
    } else {
        img.write_to(&mut std::io::Cursor::new(&mut bytes), format)
            .map_err(error)?;
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::Rgb;

    #[test]
    fn pictures_of_owned_images_are_the_shared_crates() {
        let gray = OwnedGray {
            width: 21,
            height: 21,
            pixels: vec![0; 21 * 21],
        };
        let kp = Keypoint {
            x: 10.0,
            y: 10.0,
            scale: 2.0,
            laplacian: 1,
            ..Keypoint::default()
        };
        let img = keypoint_picture(&gray, &[kp]);
        // Radius 5 circle plus the tick towards +x: (15, 10) is on both.
        assert_eq!(*img.get_pixel(15, 10), BLUE);
        assert_eq!(*img.get_pixel(10, 12), Rgb([0, 0, 0]));
        let pair = match_picture(&gray, &gray, &[], DEFAULT_MATCH_LINES);
        assert_eq!(pair.dimensions(), (42, 21));
    }

    #[test]
    fn picture_format_follows_the_extension() {
        assert_eq!(
            picture_format(Path::new("a.PNG")).unwrap(),
            ImageFormat::Png
        );
        assert_eq!(
            picture_format(Path::new("a.jpeg")).unwrap(),
            ImageFormat::Jpeg
        );
        assert_eq!(
            picture_format(Path::new("a.ppm")).unwrap(),
            ImageFormat::Pnm
        );
        for bad in ["a.gif", "a", "a.png.tmp"] {
            let e = picture_format(Path::new(bad)).unwrap_err().to_string();
            assert!(
                e.contains(bad) && e.contains(".png, .jpg/.jpeg or .ppm"),
                "{e}"
            );
        }
        let img = RgbImage::new(3, 2);
        let ppm = encode(&img, ImageFormat::Pnm, Path::new("x.ppm")).unwrap();
        assert!(ppm.starts_with(b"P6"));
    }
}
