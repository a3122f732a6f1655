//! Bad input gives error values: the banded path's checks, one test each.

use super::*;
use crate::keypoint::{DescriptorQ7, Keypoint};
use crate::surf::{FixedPoint, Float, SurfConfig};

const W: usize = 64;
const H: usize = 48;
const ADVANCE: usize = 8;

/// Two octaves: the largest sample step is 4.
fn config() -> SurfConfig {
    SurfConfig {
        octaves: 2,
        ..Default::default()
    }
}

struct Owned {
    table: Vec<u32>,
    maps: Vec<u32>,
    keypoints: Vec<Keypoint>,
    descriptors: Vec<DescriptorQ7>,
}

fn owned(width: usize, rows: usize) -> Owned {
    let c = config();
    Owned {
        table: vec![0; band_table_len(width, rows)],
        maps: vec![0; band_maps_len(width, c.octaves, c.init_sample_step, ADVANCE)],
        keypoints: vec![Keypoint::ZERO; 16],
        descriptors: vec![[0; 64]; 16],
    }
}

fn rows() -> usize {
    band_rows_for(config().octaves, config().init_sample_step, ADVANCE)
}

fn buffers(o: &mut Owned) -> BandBuffers<'_, DescriptorQ7> {
    BandBuffers {
        table: &mut o.table,
        maps: &mut o.maps,
        keypoints: &mut o.keypoints,
        descriptors: &mut o.descriptors,
    }
}

fn detector(o: &mut Owned, width: usize) -> Result<BandedSurf<'_, Float, DescriptorQ7>, BandError> {
    let buffers = buffers(o);
    BandedSurf::new(
        &config(),
        width,
        H,
        rows(),
        ADVANCE,
        buffers,
        describe_f32_q7,
    )
}

#[test]
fn a_row_of_the_wrong_length_is_rejected() {
    let mut o = owned(W, rows());
    let mut surf = detector(&mut o, W).unwrap();
    assert_eq!(
        surf.push_row(&[0u8; W + 1]),
        Err(BandError::RowLength {
            expected: W,
            actual: W + 1
        })
    );
    assert!(surf.push_row(&[0u8; W]).is_ok());
}

#[test]
fn more_rows_than_the_frame_are_rejected() {
    let mut o = owned(W, rows());
    let mut surf = detector(&mut o, W).unwrap();
    for _ in 0..H {
        surf.push_row(&[7u8; W]).unwrap();
    }
    assert!(surf.is_complete());
    assert_eq!(
        surf.push_row(&[7u8; W]),
        Err(BandError::TooManyRows { height: H })
    );
}

#[test]
fn a_frame_wider_than_the_buffers_is_rejected() {
    let mut o = owned(W, rows());
    assert!(matches!(
        detector(&mut o, W + 8),
        Err(BandError::Buffer { name: "table", .. })
    ));
    let mut o = owned(W, rows());
    o.maps.truncate(o.maps.len() - 1);
    assert!(matches!(
        detector(&mut o, W),
        Err(BandError::Buffer { name: "maps", .. })
    ));
    let mut o = owned(W, rows());
    o.descriptors.truncate(3);
    assert!(matches!(
        detector(&mut o, W),
        Err(BandError::Buffer {
            name: "descriptor",
            ..
        })
    ));
}

#[test]
fn a_band_too_short_for_the_filters_is_rejected() {
    let mut o = owned(W, rows());
    let band = buffers(&mut o);
    let short = detection_rows(config().octaves, config().init_sample_step, ADVANCE) - 1;
    let result = BandedSurf::<FixedPoint, DescriptorQ7>::new(
        &config(),
        W,
        H,
        short,
        ADVANCE,
        band,
        describe_fixed_q7,
    );
    assert!(matches!(result, Err(BandError::Geometry { .. })));
    // An advance that is not a multiple of the largest sample step (4 with two octaves).
    let mut o = owned(W, rows());
    let band = buffers(&mut o);
    let result = BandedSurf::<Float, DescriptorQ7>::new(
        &config(),
        W,
        H,
        rows() + 6,
        6,
        band,
        describe_f32_q7,
    );
    assert!(matches!(result, Err(BandError::Geometry { .. })));
}

#[test]
fn a_descriptor_window_no_kept_row_covers_is_an_error() {
    let (w, h) = (W, 200);
    let c = config();
    let band = rows();
    let mut o = owned(w, band);
    let memory = buffers(&mut o);
    let mut surf =
        BandedSurf::<Float, DescriptorQ7>::new(&c, w, h, band, ADVANCE, memory, describe_f32_q7)
            .unwrap();
    for _ in 0..band + 2 * ADVANCE {
        surf.push_row(&[50u8; W]).unwrap();
    }
    let held = surf.held_rows();
    assert!(held.start > 0, "the band has advanced: {held:?}");
    for row in [0.0, (held.start - 1) as f32, held.end as f32 + 0.6] {
        let mut kp = Keypoint {
            x: 10.0,
            y: row,
            scale: 2.0,
            ..Keypoint::ZERO
        };
        assert!(
            matches!(
                surf.describe_held(&mut kp),
                Err(BandError::WindowNotCovered { .. })
            ),
            "row {row}"
        );
    }
    let mut inside = Keypoint {
        x: 10.0,
        y: held.start as f32 + 30.0,
        scale: 2.0,
        ..Keypoint::ZERO
    };
    assert!(surf.describe_held(&mut inside).is_ok());
}

#[test]
fn sizes_are_those_of_the_docs() {
    // QVGA, three octaves, an advance of 8 rows: the firmware's configuration.
    assert_eq!(detection_margin(0, 2), 15);
    assert_eq!(detection_margin(2, 2), 57);
    assert_eq!(octave_reach(0), 61);
    assert_eq!(band_rows_for(3, 2, 8), 130);
    assert_eq!(detection_rows(3, 2, 8), 122);
    assert_eq!(detection_rows(2, 2, 8), 66);
    assert_eq!(band_table_len(320, 130), 321 * 131);
    assert_eq!(band_maps_len(320, 3, 2, 8), 6 * 640 + 4 * 320 + 3 * 160);
    // The bound of every keypoint scale of octave 0 (0.1333 (21 + 3) = 3.2).
    let kp = Keypoint {
        scale: 3.2,
        ..Keypoint::ZERO
    };
    assert!(descriptor_reach(&kp) <= octave_reach(0));
    assert!(descriptor_reach(&kp) >= 61);
}
