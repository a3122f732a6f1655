//! Helpers every stage of the backend uses: buffers that only grow, the pool's thread count,
//! stage timings, the pool kept awake through a serial step.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

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

/// How long a thread of the pool waits, spinning, for a serial step of the frame before it
/// goes back to the pool (to sleep, if there is no work): longer than any serial step of a
/// frame, short enough that a step that took longer wastes little.
const AWAKE_AT_MOST: Duration = Duration::from_millis(1);

/// Spin-loop hints between two checks of whether the serial step is done.
const SPINS_PER_CHECK: u32 = 64;

/// Runs `serial`, a step of the frame on one thread between two parallel stages, while the
/// pool's other threads wait for it awake, spinning (and yielding to the operating system, so
/// that a machine with fewer cores than threads still runs `serial`), for at most
/// [`AWAKE_AT_MOST`]. Without it they go to sleep within some tens of microseconds, and the
/// next stage wakes them again one after another as its work splits: each wake-up a trip
/// through the scheduler (the hypervisor's, in a VM), which on the lent 16-core hosts cost more
/// than the step itself (docs/BENCHMARKS.md). The result is `serial`'s; only the waiting
/// differs.
///
/// `serial` must not use the pool itself (no parallel iterators, no `join`): while it waited
/// for a job, this thread could take one of the waiting threads' spins, which end only when
/// `serial` returns. Off the pool, or with one thread, `serial` just runs.
pub(super) fn keep_awake<R>(pool: Option<&rayon::ThreadPool>, serial: impl FnOnce() -> R) -> R {
    let on_pool = rayon::current_thread_index().is_some();
    let Some(pool) = pool.filter(|p| on_pool && p.current_num_threads() > 1) else {
        return serial();
    };
    let done = AtomicBool::new(false);
    /// Says `serial` is done even when it unwinds, so that no thread spins on.
    struct Done<'a>(&'a AtomicBool);
    impl Drop for Done<'_> {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Release);
        }
    }
    pool.in_place_scope(|scope| {
        for _ in 1..pool.current_num_threads() {
            scope.spawn(|_| {
                let start = Instant::now();
                while !done.load(Ordering::Acquire) && start.elapsed() < AWAKE_AT_MOST {
                    for _ in 0..SPINS_PER_CHECK {
                        std::hint::spin_loop();
                    }
                    std::thread::yield_now();
                }
            });
        }
        let _done = Done(&done);
        serial()
    })
}
