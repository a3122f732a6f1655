"""What the latency probes (latency.py on rclpy, latency_cyclone.py on Cyclone DDS) share: the
percentile of the samples and the output lines. No DDS import: each probe runs in its own venv.
"""
import json


def percentile(values, q):
    """The value at quantile `q` (0 to 1) of `values`, nearest rank."""
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


def print_report(result, size):
    """`result` as one JSON line, then one line per topic for callers that do not parse JSON
    (the Rust integration test)."""
    print(json.dumps(result), flush=True)
    for t, r in result["topics"].items():
        print(f"latency {size} {t} count={r['count']} lost={r['lost']} "
              f"p50_ms={r.get('p50_ms', -1)} max_ms={r.get('max_ms', -1)}", flush=True)
