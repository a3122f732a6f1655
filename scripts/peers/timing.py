"""Timing shared by the peer scripts: a warm-up call, then timed calls of the same work."""
import time


def timed_runs(fn, runs):
    """Calls fn once to warm up, then `runs` more times; returns the last result and the wall
    time of each timed call in milliseconds."""
    result = fn()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        result = fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return result, times
