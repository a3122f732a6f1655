//! `--npz FILE`: the results of `detect`, `match` and `stream` as a NumPy archive, the format of
//! `numpy.savez` (a zip of `.npy` files, stored uncompressed), so that `numpy.load(FILE)` gives
//! the arrays with no parsing. The layout of each command is documented in `docs/JSON.md`
//! ("NumPy archives"); the values are those of the JSON report of the same run, bit for bit.
//!
//! The `.npy` members are written by `npyz`, the archive by `zip`.

use std::io::{Cursor, Write};
use std::path::{Path, PathBuf};

use npyz::WriterBuilder;
use surfcl_core::matcher::Match;
use surfcl_core::{Descriptor, DescriptorQ7, Keypoint};
use surfcl_gpu::Error;
use zip::ZipWriter;
use zip::write::SimpleFileOptions;

/// Columns of a keypoint row: x, y, scale, orientation, response, laplacian.
pub const KEYPOINT_COLUMNS: u64 = 6;

/// Columns of a match row: query, train, distance.
pub const MATCH_COLUMNS: u64 = 3;

/// A keypoint as its row of the `keypoints` array (the fields of the JSON keypoint, in order).
pub fn keypoint_row(k: &Keypoint) -> [f32; KEYPOINT_COLUMNS as usize] {
    [
        k.x,
        k.y,
        k.scale,
        k.orientation,
        k.response,
        f32::from(k.laplacian),
    ]
}

/// A match as its row of the `matches` array. The indices are exact in `float32`: the keypoint
/// capacity (`MAX_KEYPOINTS_LIMIT`, one million) is below 2^24.
pub fn match_row(m: &Match) -> [f32; MATCH_COLUMNS as usize] {
    [m.query as f32, m.train as f32, m.distance]
}

/// An archive being built in memory; [`Npz::finish`] gives its bytes.
pub struct Npz {
    zip: ZipWriter<Cursor<Vec<u8>>>,
    /// The output file, for error messages.
    path: PathBuf,
}

impl Npz {
    /// An empty archive for `path` (named in errors only).
    pub fn new(path: &Path) -> Self {
        Self {
            zip: ZipWriter::new(Cursor::new(Vec::new())),
            path: path.to_path_buf(),
        }
    }

    fn error(&self, e: impl std::fmt::Display) -> Error {
        Error::Encode {
            path: self.path.clone(),
            message: format!("NumPy archive: {e}"),
        }
    }

    /// Adds the array `name` (`name.npy` in the archive) of `shape`, C order, from `values`
    /// (exactly the product of `shape` of them), with `T`'s own dtype.
    fn array<T: npyz::AutoSerialize>(
        &mut self,
        name: &str,
        shape: &[u64],
        values: impl IntoIterator<Item = T>,
    ) -> Result<(), Error> {
        self.array_of(name, T::default_dtype(), shape, values)
    }

    /// [`Self::array`] with the elements stored as `dtype`.
    fn array_of<T>(
        &mut self,
        name: &str,
        dtype: npyz::DType,
        shape: &[u64],
        values: impl IntoIterator<Item = T>,
    ) -> Result<(), Error>
    where
        T: npyz::Serialize,
    {
        let mut npy = Vec::new();
        let mut writer = npyz::WriteOptions::<T>::new()
            .dtype(dtype)
            .shape(shape)
            .writer(&mut npy)
            .begin_nd()
            .map_err(|e| self.error(e))?;
        writer.extend(values).map_err(|e| self.error(e))?;
        writer.finish().map_err(|e| self.error(e))?;
        let options = SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored)
            .large_file(npy.len() as u64 >= u64::from(u32::MAX));
        self.zip
            .start_file(format!("{name}.npy"), options)
            .map_err(|e| self.error(e))?;
        self.zip.write_all(&npy).map_err(|e| self.error(e))
    }

    /// `name`: a two-dimensional array of `items.len()` rows of `N` columns, `row(item)` each.
    fn rows<T, E: npyz::AutoSerialize, const N: usize>(
        &mut self,
        name: &str,
        items: &[T],
        row: impl Fn(&T) -> [E; N],
    ) -> Result<(), Error> {
        let shape = [items.len() as u64, N as u64];
        self.array(name, &shape, items.iter().flat_map(row))
    }

    /// `name`: an `(n, 6)` `float32` array, one keypoint per row ([`keypoint_row`]).
    pub fn keypoints(&mut self, name: &str, keypoints: &[Keypoint]) -> Result<(), Error> {
        self.rows(name, keypoints, keypoint_row)
    }

    /// `name`: an `(n, 64)` `float32` array, one unit-length descriptor per row.
    pub fn descriptors(&mut self, name: &str, descriptors: &[Descriptor]) -> Result<(), Error> {
        self.rows(name, descriptors, |d| *d)
    }

    /// `name`: an `(n, 64)` `int8` array, one Q7 descriptor per row.
    pub fn descriptors_q7(
        &mut self,
        name: &str,
        descriptors: &[DescriptorQ7],
    ) -> Result<(), Error> {
        self.rows(name, descriptors, |d| *d)
    }

    /// `name`: an `(m, 3)` `float32` array, one match per row ([`match_row`]).
    pub fn matches(&mut self, name: &str, matches: &[Match]) -> Result<(), Error> {
        self.rows(name, matches, match_row)
    }

    /// `name`: a one-dimensional `int64` array.
    pub fn ints(&mut self, name: &str, values: &[i64]) -> Result<(), Error> {
        self.array(name, &[values.len() as u64], values.iter().copied())
    }

    /// `name`: a one-dimensional `float64` array.
    pub fn floats(&mut self, name: &str, values: &[f64]) -> Result<(), Error> {
        self.array(name, &[values.len() as u64], values.iter().copied())
    }

    /// `name`: a 0-d `int64` array (`int(z[name])` in numpy).
    pub fn scalar(&mut self, name: &str, value: i64) -> Result<(), Error> {
        self.array(name, &[], [value])
    }

    /// `name`: a 0-d unicode string array (`str(z[name])` in numpy), used for the run's
    /// parameters as JSON text.
    pub fn text(&mut self, name: &str, text: &str) -> Result<(), Error> {
        let chars = text.chars().count().max(1);
        let dtype = format!("<U{chars}")
            .parse::<npyz::TypeStr>()
            .map_err(|e| self.error(e))?;
        self.array_of::<String>(name, npyz::DType::Plain(dtype), &[], [text.to_owned()])
    }

    /// The archive's bytes.
    pub fn finish(self) -> Result<Vec<u8>, Error> {
        let path = self.path;
        self.zip
            .finish()
            .map(Cursor::into_inner)
            .map_err(|e| Error::Encode {
                path,
                message: format!("NumPy archive: {e}"),
            })
    }
}

/// The `params` and `format_version` members every archive has.
pub fn with_params(path: &Path, params: &impl serde::Serialize) -> Result<Npz, Error> {
    let mut npz = Npz::new(path);
    npz.scalar("format_version", i64::from(crate::report::FORMAT_VERSION))?;
    npz.text("params", &serde_json::to_string(params)?)?;
    Ok(npz)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_archive_has_one_npy_member_per_array_with_its_header() {
        let mut npz = Npz::new(Path::new("t.npz"));
        let k = Keypoint {
            x: 1.5,
            y: 2.25,
            laplacian: -1,
            ..Keypoint::default()
        };
        npz.keypoints("keypoints", &[k, k]).unwrap();
        npz.text("params", "{\"a\":1}").unwrap();
        let bytes = npz.finish().unwrap();
        let mut zip = zip::ZipArchive::new(Cursor::new(bytes)).unwrap();
        let names: Vec<String> = zip.file_names().map(str::to_owned).collect();
        assert_eq!(names.len(), 2);
        assert!(names.contains(&"keypoints.npy".to_string()), "{names:?}");
        let mut member = Vec::new();
        std::io::Read::read_to_end(&mut zip.by_name("keypoints.npy").unwrap(), &mut member)
            .unwrap();
        let npy = npyz::NpyFile::new(&member[..]).unwrap();
        assert_eq!(npy.shape(), &[2, 6]);
        let values: Vec<f32> = npy.into_vec().unwrap();
        assert_eq!(&values[..6], &[1.5, 2.25, 0.0, 0.0, 0.0, -1.0]);
    }
}
