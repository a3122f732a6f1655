//! Matching on the backend's threads: the queries split into one contiguous range per thread,
//! each with its own outputs, merged afterwards (see `surfcl_core::matcher`, "Splitting the
//! queries"): exactly the result of one call over all queries.

use rayon::prelude::*;

use surfcl_core::Keypoint;
use surfcl_core::matcher::{
    Match, MatchConfig, TrainBest, merge_train_best, reset_train_best, retain_mutual,
};

use super::simd::RangeMatcher;
use super::support::{ensure_len, thread_count};
use crate::backend::Features;
use crate::error::Error;

/// Below this many queries per thread, splitting costs more than it saves.
const MIN_QUERIES_PER_THREAD: usize = 128;

/// The two sides of a matching call.
pub(super) struct Sides<'a, D> {
    pub query_kps: &'a [Keypoint],
    pub query_desc: &'a [D],
    pub train_kps: &'a [Keypoint],
    pub train_desc: &'a [D],
}

impl<'a, D> Sides<'a, D> {
    /// The two frames' keypoints with the descriptors to compare: the frames' own, or a
    /// quantised copy of them.
    pub(super) fn new(
        query: &'a Features,
        train: &'a Features,
        query_desc: &'a [D],
        train_desc: &'a [D],
    ) -> Self {
        Self {
            query_kps: &query.keypoints,
            query_desc,
            train_kps: &train.keypoints,
            train_desc,
        }
    }
}

/// Splits the queries into contiguous ranges, one per thread, each with its own output slice and
/// (with the mutual check) its own per-train nearest-query slice; merges them afterwards. The
/// result is identical to one `match_*` call over all queries.
pub(super) fn parallel_match<D: Sync>(
    sides: Sides<'_, D>,
    config: &MatchConfig,
    pool: Option<&rayon::ThreadPool>,
    out: &mut Vec<Match>,
    train_best: &mut Vec<Vec<TrainBest>>,
    matcher: RangeMatcher<D>,
) -> Result<Vec<Match>, Error> {
    let n_query = sides.query_desc.len();
    let n_train = sides.train_desc.len();
    let threads = thread_count(pool)
        .min(n_query / MIN_QUERIES_PER_THREAD)
        .clamp(1, n_query.max(1));
    let chunk = n_query.div_ceil(threads).max(1);
    ensure_len(out, n_query);
    if train_best.len() < threads {
        train_best.resize_with(threads, Vec::new);
    }
    let best_len = if config.cross_check { n_train } else { 0 };
    for best in train_best.iter_mut().take(threads) {
        best.resize(best_len, TrainBest::EMPTY);
        reset_train_best(best);
    }

    let one_range = |(i, (out_chunk, best)): (usize, (&mut [Match], &mut Vec<TrainBest>))| {
        let range = i * chunk..(i * chunk + out_chunk.len());
        matcher(
            sides.query_kps,
            sides.query_desc,
            range,
            sides.train_kps,
            sides.train_desc,
            config,
            best,
            out_chunk,
        )
        .map_err(Error::from)
    };
    let results: Vec<Result<usize, Error>> = match pool.filter(|_| threads > 1) {
        Some(pool) => pool.install(|| {
            out[..n_query]
                .par_chunks_mut(chunk)
                .zip(train_best.par_iter_mut())
                .enumerate()
                .map(one_range)
                .collect()
        }),
        None => out[..n_query]
            .chunks_mut(chunk)
            .zip(train_best.iter_mut())
            .enumerate()
            .map(one_range)
            .collect(),
    };
    let counts = results.into_iter().collect::<Result<Vec<usize>, Error>>()?;

    if config.cross_check && counts.len() > 1 {
        let (first, rest) = train_best.split_at_mut(1);
        for other in rest.iter().take(counts.len() - 1) {
            merge_train_best(&mut first[0], other)?;
        }
    }
    let mut matches = Vec::with_capacity(counts.iter().sum());
    for (i, &count) in counts.iter().enumerate() {
        let found = &mut out[i * chunk..i * chunk + count];
        let kept = if config.cross_check {
            retain_mutual(found, &train_best[0])
        } else {
            count
        };
        matches.extend_from_slice(&found[..kept]);
    }
    Ok(matches)
}
