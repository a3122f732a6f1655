"""What the rclpy probes share: the failure type, the main loop around a check and the spinning.

A probe's `run(node, args, deadline, result)` fills `result` and raises `Failed` at the first
check that does not hold; `run_probe` prints `result` as one JSON line with "ok" and turns it
into the exit code.
"""
import json
import time

import rclpy


class Failed(Exception):
    """A check of the probe did not hold; the message says which."""


def run_probe(node_name, run, args):
    """Runs `run` in a fresh rclpy node within `args.timeout` seconds; returns the exit code."""
    deadline = time.monotonic() + args.timeout
    rclpy.init()
    node = rclpy.create_node(node_name)
    result = {}
    try:
        run(node, args, deadline, result)
        result["ok"] = True
        print(json.dumps(result), flush=True)
        return 0
    except Failed as e:
        result.update(ok=False, error=str(e))
        print(json.dumps(result), flush=True)
        return 1
    finally:
        node.destroy_node()
        rclpy.shutdown()


def spin_until(node, deadline, done, what):
    """Spins until `done()`; raises `Failed` naming `what` past the deadline."""
    while not done():
        if time.monotonic() > deadline:
            raise Failed(f"timed out waiting for {what}")
        rclpy.spin_once(node, timeout_sec=0.02)


def spin_for(node, seconds):
    """Spins for `seconds`, e.g. so that the node's reader matches our writer after the graph
    shows it: the first frame is not lost on the way in."""
    t_end = time.monotonic() + seconds
    while time.monotonic() < t_end:
        rclpy.spin_once(node, timeout_sec=0.05)
