//! Helpers every stage of the backend uses: buffers that only grow, the pool's thread count,
//! stage timings.

use std::time::Instant;

/// Grows `v` to at least `len` elements (never shrinks, so buffers are reused across frames).
pub(super) fn ensure_len<T: Clone + Default>(v: &mut Vec<T>, len: usize) {
    if v.len() < len {
        v.resize(len, T::default());
    }
}

/// The threads work runs on: `pool`'s, or the calling thread alone.
pub(super) fn thread_count(pool: Option<&rayon::ThreadPool>) -> usize {
    pool.map_or(1, rayon::ThreadPool::current_num_threads)
}

/// Milliseconds since `start`.
pub(super) fn ms_since(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1e3
}
