//! Planar homographies for evaluation: the Oxford (Mikolajczyk) ground-truth format, projecting
//! points, correct-match tests and repeatability.
//!
//! # Definitions
//! - A homography `H` (3x3, `f64`, row-major) maps pixel `(x, y)` of image A to
//!   `(u / w, v / w)` of image B with `[u, v, w]^T = H [x, y, 1]^T`, evaluated in `f64` as
//!   `u = (h00 x + h01 y) + h02` (and likewise `v`, `w`). The projection does not exist (`None`)
//!   when `|w| <= 1e-9 * (|h20 x| + |h21 y| + |h22|)` (the point maps to, or near, infinity) or when
//!   the result is not finite in `f32`.
//! - Oxford files (`H1to2p` ...): exactly 9 finite numbers, 3 per line on 3 non-empty lines,
//!   separated by ASCII whitespace (blank lines and trailing whitespace are accepted).
//! - A homography must be invertible: [`Homography::new`] and [`Homography::parse`] refuse a
//!   matrix whose entries are not all finite, or that is **singular**. The test is scale-free
//!   (a homography is defined up to a factor): the matrix is divided by its largest absolute entry
//!   `m` (so 1e308 entries cannot overflow), and it is singular when
//!   `|det| <= SINGULAR_RATIO * |r0| |r1| |r2|` for the scaled rows `r_i` (Hadamard's bound
//!   `|det| <= |r0| |r1| |r2|` is reached by orthogonal rows; an all-zero matrix has `m = 0`).
//!   The Oxford boat files have ratios of about `1e-5`, a shift by 16384 px about `1e-8`; rank-deficient
//!   matrices land near `1e-16` (rounding).
//! - A match `(a, b)` is **correct** when `H(a)` exists and lies within `tolerance_px` of `b`
//!   (Euclidean, inclusive).
//! - **Repeatability** of A in B: `in_view` = points of A whose projection exists and lies inside
//!   B (`0 <= x < width_b`, `0 <= y < height_b`); `repeated` = those of them with at least one point
//!   of B within `tolerance_px`; `ratio = repeated / in_view` (0 when nothing is in view). It sorts
//!   B's indices by `x` in a caller-provided scratch and scans only the `x`-window of each query, so
//!   5000 x 5000 points take milliseconds, not a 25-million-pair scan.
//!
//! ```
//! use surfcl_core::homography::Homography;
//! let h = Homography::parse("1 0 5\n0 1 -2\n0 0 1\n").unwrap();
//! assert_eq!(h.project(10.0, 10.0), Some((15.0, 8.0)));
//! assert!(Homography::parse("1 0 5 0 1 -2 0 0").is_err());
//! ```

use core::fmt;

use crate::keypoint::Keypoint;
use crate::matcher::Match;

/// A 3x3 homography, row-major, in `f64`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Homography(pub [[f64; 3]; 3]);

/// Why a homography file or an evaluation call was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HomographyError {
    /// The text does not hold exactly 9 numbers.
    WrongCount {
        /// Numbers found (counting stops at 10).
        found: usize,
    },
    /// A token is not a number, or the number is not finite.
    NotANumber {
        /// 0-based index of the token.
        index: usize,
    },
    /// The 9 numbers are not laid out as 3 lines of 3.
    Layout,
    /// The scratch slice does not have one entry per point of B.
    ScratchLength {
        /// Entries required.
        expected: usize,
        /// Entries given.
        actual: usize,
    },
    /// More points than `u32` indices can address.
    TooMany {
        /// Number of points given.
        len: usize,
    },
    /// The matrix is singular (or all zero): it maps the image onto a line or a point, so it
    /// cannot be a ground truth between two views (module docs).
    Singular,
}

impl fmt::Display for HomographyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HomographyError::WrongCount { found } => {
                write!(f, "homography needs exactly 9 numbers, found {found}")
            }
            HomographyError::NotANumber { index } => {
                write!(f, "homography entry {index} is not a finite number")
            }
            HomographyError::Layout => write!(f, "homography must be 3 lines of 3 numbers"),
            HomographyError::ScratchLength { expected, actual } => {
                write!(f, "scratch has {actual} entries, {expected} required")
            }
            HomographyError::TooMany { len } => {
                write!(f, "{len} points exceed the u32 index range")
            }
            HomographyError::Singular => write!(
                f,
                "homography is singular (determinant about 0): it maps the image onto a line or a point"
            ),
        }
    }
}

impl core::error::Error for HomographyError {}

impl Homography {
    /// The identity.
    pub const IDENTITY: Self = Self([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]);

    /// Smallest `|det| / (|r0| |r1| |r2|)` of an accepted matrix (module docs).
    pub const SINGULAR_RATIO: f64 = 1e-14;

    /// A checked homography: every entry finite and the matrix not singular (module docs).
    ///
    /// ```
    /// use surfcl_core::homography::{Homography, HomographyError};
    /// assert!(Homography::new([[2.0, 0.0, 5.0], [0.0, 2.0, 1.0], [0.0, 0.0, 1.0]]).is_ok());
    /// assert_eq!(Homography::new([[0.0; 3]; 3]), Err(HomographyError::Singular));
    /// assert_eq!(Homography::new([[1e308; 3]; 3]), Err(HomographyError::Singular));
    /// ```
    pub fn new(m: [[f64; 3]; 3]) -> Result<Self, HomographyError> {
        let h = Self(m);
        h.validate()?;
        Ok(h)
    }

    /// Checks the conditions of [`Homography::new`] (for matrices built through the public field).
    pub fn validate(&self) -> Result<(), HomographyError> {
        let mut largest = 0.0f64;
        for (index, &v) in self.0.iter().flatten().enumerate() {
            if !v.is_finite() {
                return Err(HomographyError::NotANumber { index });
            }
            largest = largest.max(crate::math::fabs(v));
        }
        if largest == 0.0 {
            return Err(HomographyError::Singular);
        }
        // Scaled entries lie in [-1, 1]: nothing below can overflow.
        let s = self.0.map(|row| row.map(|v| v / largest));
        let det = s[0][0] * (s[1][1] * s[2][2] - s[1][2] * s[2][1])
            - s[0][1] * (s[1][0] * s[2][2] - s[1][2] * s[2][0])
            + s[0][2] * (s[1][0] * s[2][1] - s[1][1] * s[2][0]);
        let norm = |r: [f64; 3]| crate::math::sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2]);
        let bound = norm(s[0]) * norm(s[1]) * norm(s[2]);
        // A NaN determinant (not reachable with finite entries) is refused too.
        let ratio_ok = crate::math::fabs(det) > Self::SINGULAR_RATIO * bound;
        if det.is_nan() || !ratio_ok {
            return Err(HomographyError::Singular);
        }
        Ok(())
    }

    /// Parses the Oxford text format and checks the matrix with [`Homography::new`] (module
    /// docs).
    pub fn parse(text: &str) -> Result<Self, HomographyError> {
        let mut m = [[0.0f64; 3]; 3];
        let mut count = 0usize;
        let mut lines = 0usize;
        for line in text.lines() {
            let mut in_line = 0usize;
            for token in line.split_ascii_whitespace() {
                if count >= 9 {
                    return Err(HomographyError::WrongCount { found: count + 1 });
                }
                let value: f64 = token
                    .parse()
                    .map_err(|_| HomographyError::NotANumber { index: count })?;
                if !value.is_finite() {
                    return Err(HomographyError::NotANumber { index: count });
                }
                m[count / 3][count % 3] = value;
                count += 1;
                in_line += 1;
            }
            match in_line {
                0 => {}
                3 => lines += 1,
                _ => {
                    // A wrong total takes precedence over the layout.
                    let total = text.split_ascii_whitespace().count();
                    if total != 9 {
                        return Err(HomographyError::WrongCount {
                            found: total.min(10),
                        });
                    }
                    return Err(HomographyError::Layout);
                }
            }
        }
        if count != 9 {
            return Err(HomographyError::WrongCount { found: count });
        }
        if lines != 3 {
            return Err(HomographyError::Layout);
        }
        Self::new(m)
    }

    /// Projects `(x, y)`; `None` when the point maps to infinity (module docs).
    pub fn project(&self, x: f32, y: f32) -> Option<(f32, f32)> {
        let (x, y) = (f64::from(x), f64::from(y));
        let h = &self.0;
        let u = (h[0][0] * x + h[0][1] * y) + h[0][2];
        let v = (h[1][0] * x + h[1][1] * y) + h[1][2];
        let (wx, wy) = (h[2][0] * x, h[2][1] * y);
        let w = (wx + wy) + h[2][2];
        let magnitude = crate::math::fabs(wx) + crate::math::fabs(wy) + crate::math::fabs(h[2][2]);
        if w.is_nan() || crate::math::fabs(w) <= 1e-9 * magnitude {
            return None;
        }
        let (px, py) = ((u / w) as f32, (v / w) as f32);
        (px.is_finite() && py.is_finite()).then_some((px, py))
    }
}

/// The tolerance of the evaluation protocol: a match is correct when the homography maps its
/// query point within this many pixels of its train point (Mikolajczyk et al.'s image pairs).
pub const CORRECT_TOLERANCE_PX: f32 = 3.0;

/// For each match, whether `h` maps its query keypoint within [`CORRECT_TOLERANCE_PX`] of its
/// train keypoint; a match whose indices are out of range is wrong.
pub fn correct_matches<'a>(
    h: &'a Homography,
    query: &'a [Keypoint],
    train: &'a [Keypoint],
    matches: &'a [Match],
) -> impl Iterator<Item = bool> + 'a {
    matches.iter().map(
        move |m| match (query.get(m.query as usize), train.get(m.train as usize)) {
            (Some(a), Some(b)) => is_correct(h, a, b, CORRECT_TOLERANCE_PX),
            _ => false,
        },
    )
}

/// Whether `H(a)` lies within `tolerance_px` of `b` (module docs).
pub fn is_correct(h: &Homography, a: &Keypoint, b: &Keypoint, tolerance_px: f32) -> bool {
    h.project(a.x, a.y)
        .is_some_and(|(x, y)| within(x, y, b, tolerance_px))
}

#[inline]
fn within(x: f32, y: f32, b: &Keypoint, tolerance_px: f32) -> bool {
    let dx = f64::from(x) - f64::from(b.x);
    let dy = f64::from(y) - f64::from(b.y);
    let t = f64::from(tolerance_px);
    dx * dx + dy * dy <= t * t
}

/// Result of [`repeatability`].
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Repeatability {
    /// Points of A that project inside B.
    pub in_view: usize,
    /// Of those, the ones with a point of B within the tolerance.
    pub repeated: usize,
    /// `repeated / in_view`, or 0 when nothing is in view.
    pub ratio: f32,
}

/// Repeatability of `points_a` in `points_b` under `h` (module docs). `scratch` needs one entry
/// per point of B (it receives B's indices sorted by `x`).
pub fn repeatability(
    h: &Homography,
    points_a: &[Keypoint],
    points_b: &[Keypoint],
    width_b: usize,
    height_b: usize,
    tolerance_px: f32,
    scratch: &mut [u32],
) -> Result<Repeatability, HomographyError> {
    if scratch.len() != points_b.len() {
        return Err(HomographyError::ScratchLength {
            expected: points_b.len(),
            actual: scratch.len(),
        });
    }
    if u32::try_from(points_b.len()).is_err() {
        return Err(HomographyError::TooMany {
            len: points_b.len(),
        });
    }
    for (i, s) in scratch.iter_mut().enumerate() {
        *s = i as u32; // fits: checked above
    }
    let x_of = |i: u32| points_b[i as usize].x;
    scratch.sort_unstable_by(|&i, &j| x_of(i).total_cmp(&x_of(j)).then(i.cmp(&j)));
    // A NaN tolerance finds nothing; a negative one likewise (no distance is below it).
    let tol = if tolerance_px >= 0.0 {
        tolerance_px
    } else {
        -1.0
    };
    let (w, hgt) = (width_b as f32, height_b as f32);
    let mut result = Repeatability::default();
    for a in points_a {
        let Some((x, y)) = h.project(a.x, a.y) else {
            continue;
        };
        if !(x >= 0.0 && x < w && y >= 0.0 && y < hgt) {
            continue;
        }
        result.in_view += 1;
        if tol < 0.0 {
            continue;
        }
        // The x-window in f64, where `x +- tol` is exact enough that no point within the
        // tolerance falls outside it; the exact test is `within`.
        let (lo, hi) = (f64::from(x) - f64::from(tol), f64::from(x) + f64::from(tol));
        let start = scratch.partition_point(|&i| f64::from(x_of(i)) < lo);
        let found = scratch[start..]
            .iter()
            .take_while(|&&i| f64::from(x_of(i)) <= hi)
            .any(|&i| within(x, y, &points_b[i as usize], tol));
        if found {
            result.repeated += 1;
        }
    }
    result.ratio = if result.in_view == 0 {
        0.0
    } else {
        result.repeated as f32 / result.in_view as f32
    };
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng, rngs::StdRng};
    use std::vec::Vec;

    fn read(name: &str) -> std::string::String {
        let path = std::format!("{}/../data/oxford-boat/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(path).unwrap()
    }

    #[test]
    fn parses_every_boat_file() {
        assert_eq!(
            Homography::parse(&read("H1to1p")).unwrap(),
            Homography::IDENTITY
        );
        let h = Homography::parse(&read("H1to2p")).unwrap();
        assert_eq!(h.0[0][0], 8.5828552e-01);
        assert_eq!(h.0[1][2], 1.3047838e+02);
        assert_eq!(h.0[2][1], 1.2886110e-06);
        let (x, y) = h.project(0.0, 0.0).unwrap();
        assert!((x - 9.910_142).abs() < 1e-5 && (y - 130.47838).abs() < 1e-4);
        for i in 3..=6 {
            let h = Homography::parse(&read(&std::format!("H1to{i}p"))).unwrap();
            // The boat sequence zooms and rotates: the image centre stays in view.
            let (x, y) = h.project(425.0, 340.0).unwrap();
            assert!(
                (0.0..850.0).contains(&x) && (0.0..680.0).contains(&y),
                "{i}: {x} {y}"
            );
            assert_eq!(h.0[2][2], 1.0);
        }
    }

    #[test]
    fn parse_is_strict() {
        let ok = "1 0 0\n0 1 0\n0 0 1\n";
        assert!(Homography::parse(ok).is_ok());
        assert!(Homography::parse("\n 1 0 0 \n\n0 1 0\r\n0 0 1").is_ok());
        assert_eq!(
            Homography::parse("1 0 0\n0 1 0\n0 0"),
            Err(HomographyError::WrongCount { found: 8 })
        );
        assert_eq!(
            Homography::parse("1 0 0\n0 1 0\n0 0 1 7"),
            Err(HomographyError::WrongCount { found: 10 })
        );
        assert_eq!(
            Homography::parse("1 0 0 0\n1 0\n0 0 1"),
            Err(HomographyError::Layout)
        );
        assert_eq!(
            Homography::parse("1 0 0 0 1 0 0 0 1"),
            Err(HomographyError::Layout)
        );
        assert_eq!(
            Homography::parse("1 0 0\n0 x 0\n0 0 1"),
            Err(HomographyError::NotANumber { index: 4 })
        );
        for bad in ["nan", "inf", "-inf", "1e999"] {
            let text = std::format!("1 0 0\n0 1 0\n0 0 {bad}");
            assert_eq!(
                Homography::parse(&text),
                Err(HomographyError::NotANumber { index: 8 })
            );
        }
        assert_eq!(
            Homography::parse(""),
            Err(HomographyError::WrongCount { found: 0 })
        );
    }

    #[test]
    fn singular_and_non_finite_matrices_are_refused() {
        let singular = [
            "0 0 0\n0 0 0\n0 0 0",
            "1e308 1e308 1e308\n1e308 1e308 1e308\n1e308 1e308 1e308",
            "-1e308 1e308 1e308\n1e308 -1e308 1e308\n0 0 0",
            // Rank 2: the third row is the sum of the first two.
            "1 2 3\n4 5 6\n5 7 9",
            // Rank 1.
            "1 2 3\n2 4 6\n3 6 9",
            // Rank 2 up to rounding (the third row is 0.1 r0 + 0.3 r1, not exact in binary).
            "0.7 -1.3 250.5\n0.2 0.9 -80.25\n0.13 0.14 0.975",
        ];
        for text in singular {
            assert_eq!(
                Homography::parse(text),
                Err(HomographyError::Singular),
                "{text}"
            );
        }
        assert_eq!(
            Homography::new([[1.0, 0.0, 0.0], [0.0, f64::NAN, 0.0], [0.0, 0.0, 1.0]]),
            Err(HomographyError::NotANumber { index: 4 })
        );
        assert_eq!(
            Homography::new([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, f64::INFINITY]]),
            Err(HomographyError::NotANumber { index: 8 })
        );
        // Accepted: every boat file (parses_every_boat_file), large shifts and zooms, a
        // mirror, huge but regular entries.
        for ok in [
            [[1.0, 0.0, 16384.0], [0.0, 1.0, -16384.0], [0.0, 0.0, 1.0]],
            [[0.05, 0.0, 16384.0], [0.0, 0.05, 16384.0], [0.0, 0.0, 1.0]],
            [[-1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]],
            [[1e300, 0.0, 0.0], [0.0, 1e300, 0.0], [0.0, 0.0, 1e300]],
            [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1e-3, 0.0, 1.0]],
        ] {
            assert_eq!(Homography::new(ok), Ok(Homography(ok)), "{ok:?}");
        }
        assert!(Homography::IDENTITY.validate().is_ok());
    }

    #[test]
    fn projection_at_infinity_is_none() {
        // w = x - 1: the line x = 1 maps to infinity.
        let h = Homography([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1.0, 0.0, -1.0]]);
        assert_eq!(h.project(1.0, 5.0), None);
        assert_eq!(h.project(3.0, 4.0), Some((1.5, 2.0)));
        assert_eq!(Homography([[0.0; 3]; 3]).project(1.0, 1.0), None);
    }

    fn kp(x: f32, y: f32) -> Keypoint {
        Keypoint {
            x,
            y,
            ..Keypoint::default()
        }
    }

    #[test]
    fn correct_matches_use_inclusive_tolerance() {
        let h = Homography::parse("1 0 5\n0 1 -2\n0 0 1").unwrap();
        assert!(is_correct(&h, &kp(1.0, 1.0), &kp(6.0, -1.0), 0.0));
        assert!(is_correct(&h, &kp(1.0, 1.0), &kp(9.0, 3.0), 5.0)); // 3-4-5
        assert!(!is_correct(&h, &kp(1.0, 1.0), &kp(9.0, 3.0), 4.99));
    }

    fn brute(
        h: &Homography,
        a: &[Keypoint],
        b: &[Keypoint],
        w: usize,
        hh: usize,
        t: f32,
    ) -> (usize, usize) {
        let mut in_view = 0;
        let mut repeated = 0;
        for p in a {
            if let Some((x, y)) = h.project(p.x, p.y)
                && x >= 0.0
                && x < w as f32
                && y >= 0.0
                && y < hh as f32
            {
                {
                    in_view += 1;
                    if b.iter().any(|q| {
                        (f64::from(x) - f64::from(q.x)).powi(2)
                            + (f64::from(y) - f64::from(q.y)).powi(2)
                            <= f64::from(t) * f64::from(t)
                    }) {
                        repeated += 1;
                    }
                }
            }
        }
        (in_view, repeated)
    }

    #[test]
    fn repeatability_equals_brute_force() {
        let mut rng = StdRng::seed_from_u64(8);
        let h = Homography::parse(&read("H1to3p")).unwrap();
        for (na, nb, tol) in [
            (300usize, 400usize, 3.0f32),
            (1000, 50, 10.0),
            (0, 10, 2.0),
            (20, 0, 2.0),
        ] {
            let a: Vec<Keypoint> = (0..na)
                .map(|_| kp(rng.gen_range(-50.0..900.0), rng.gen_range(-50.0..700.0)))
                .collect();
            // B: half near the true projections, half random.
            let b: Vec<Keypoint> = (0..nb)
                .map(|i| match a.get(i).and_then(|p| h.project(p.x, p.y)) {
                    Some((x, y)) if i % 2 == 0 => {
                        kp(x + rng.gen_range(-4.0..4.0), y + rng.gen_range(-4.0..4.0))
                    }
                    _ => kp(rng.gen_range(0.0..850.0), rng.gen_range(0.0..680.0)),
                })
                .collect();
            let mut scratch = vec![0u32; nb];
            let r = repeatability(&h, &a, &b, 850, 680, tol, &mut scratch).unwrap();
            assert_eq!((r.in_view, r.repeated), brute(&h, &a, &b, 850, 680, tol));
            if na == 300 {
                assert!(r.repeated > 20 && r.repeated < r.in_view);
                assert!((r.ratio - r.repeated as f32 / r.in_view as f32).abs() < 1e-6);
            }
        }
        assert_eq!(
            repeatability(&h, &[], &[kp(0.0, 0.0)], 1, 1, 1.0, &mut []),
            Err(HomographyError::ScratchLength {
                expected: 1,
                actual: 0
            })
        );
    }

    #[test]
    fn repeatability_is_fast_for_5000_points() {
        let mut rng = StdRng::seed_from_u64(1);
        let a: Vec<Keypoint> = (0..5000)
            .map(|_| kp(rng.gen_range(0.0..850.0), rng.gen_range(0.0..680.0)))
            .collect();
        let b: Vec<Keypoint> = a.iter().map(|p| kp(p.x + 1.0, p.y)).collect();
        let mut scratch = vec![0u32; b.len()];
        let start = std::time::Instant::now();
        let r = repeatability(&Homography::IDENTITY, &a, &b, 850, 680, 1.5, &mut scratch).unwrap();
        let elapsed = start.elapsed();
        assert_eq!((r.in_view, r.repeated), (5000, 5000));
        // The brute force takes 25 M distance tests; the window scan a few hundred thousand.
        assert!(elapsed.as_millis() < 2000, "{elapsed:?}");
    }
}
