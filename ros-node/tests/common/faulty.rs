//! A fault-injecting wrapper around any [`ProcessorFactory`]: chosen frames fail (or panic) in
//! `detect`, or fail in `match_frames`, and the first `open` calls can fail. Frames are chosen by their width, so
//! that a re-sent copy of a failing frame fails again (the tests resend best-effort images).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use surfcl_core::GrayImage;
use surfcl_ros::msg::MatchMsg;
use surfcl_ros::params::NodeParams;
use surfcl_ros::processor::{Detection, Processor, ProcessorError, ProcessorFactory};

/// The reason an injected detection fault gives.
pub const DETECT_FAULT: &str = "injected detection fault";
/// The reason an injected matching fault gives.
pub const MATCH_FAULT: &str = "injected matching fault";
/// The message of an injected panic.
pub const PANIC_FAULT: &str = "injected panic";
/// The reason an injected open fault gives.
pub const OPEN_FAULT: &str = "injected open fault";

/// What fails.
#[derive(Default)]
pub struct Faults {
    /// Detection of an image this wide fails.
    pub detect_width: Option<usize>,
    /// Detection of an image this wide panics.
    pub panic_width: Option<usize>,
    /// Matching whose query (current) frame is this wide fails.
    pub match_width: Option<usize>,
    /// This many of the next `open` calls fail.
    pub open_failures: AtomicUsize,
    /// `open` calls made, failed or not.
    pub opens: AtomicUsize,
}

/// Wraps `inner`, injecting `faults`.
pub struct FaultyFactory {
    pub inner: Arc<dyn ProcessorFactory>,
    pub faults: Arc<Faults>,
}

impl ProcessorFactory for FaultyFactory {
    fn check(&self, params: &NodeParams) -> Result<(), ProcessorError> {
        self.inner.check(params)
    }
    fn open(&self, params: &NodeParams) -> Result<Box<dyn Processor>, ProcessorError> {
        self.faults.opens.fetch_add(1, Ordering::SeqCst);
        let fail = self
            .faults
            .open_failures
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if fail {
            return Err(OPEN_FAULT.into());
        }
        Ok(Box::new(FaultyProcessor {
            inner: self.inner.open(params)?,
            faults: Arc::clone(&self.faults),
        }))
    }
}

struct FaultyProcessor {
    inner: Box<dyn Processor>,
    faults: Arc<Faults>,
}

impl Processor for FaultyProcessor {
    fn describe(&self) -> String {
        format!("faulty {}", self.inner.describe())
    }
    fn detect(
        &mut self,
        image: &GrayImage<'_>,
        params: &NodeParams,
    ) -> Result<Detection, ProcessorError> {
        if self.faults.detect_width == Some(image.width()) {
            return Err(DETECT_FAULT.into());
        }
        if self.faults.panic_width == Some(image.width()) {
            panic!("{PANIC_FAULT}");
        }
        self.inner.detect(image, params)
    }
    fn match_frames(
        &mut self,
        query: &mut Detection,
        train: &mut Detection,
        params: &NodeParams,
    ) -> Result<Vec<MatchMsg>, ProcessorError> {
        if self.faults.match_width == Some(query.width) {
            return Err(MATCH_FAULT.into());
        }
        self.inner.match_frames(query, train, params)
    }
}
