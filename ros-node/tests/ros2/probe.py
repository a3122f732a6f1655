"""What the rclpy probes share: the failure type, the main loop around a check and the spinning.

A probe's `run(node, args, deadline, result)` fills `result` and raises `Failed` at the first
check that does not hold; `run_probe` prints `result` as one JSON line with "ok" and turns it
into the exit code.
"""
import argparse
import json
import time

import rclpy
from sensor_msgs.msg import Image


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


def node_probe_main(description, node_name, run, add_arguments=None):
    """The `main` of a probe that takes `--node` (the surfcl node's name), `--timeout` and what
    `add_arguments(parser)` adds: parses them and runs `run` as `node_name` (`run_probe`)."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--node", default="surfcl_node")
    ap.add_argument("--timeout", type=float, default=60.0)
    if add_arguments is not None:
        add_arguments(ap)
    return run_probe(node_name, run, ap.parse_args())


def call_service(node, deadline, srv_type, name, request):
    """Calls the service `name` once it is ready and returns its reply; raises `Failed` past
    the deadline."""
    client = node.create_client(srv_type, name)
    spin_until(node, deadline, client.service_is_ready, f"service {name}")
    future = client.call_async(request)
    spin_until(node, deadline, future.done, f"reply of {name}")
    node.destroy_client(client)
    return future.result()


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


def outputs_and_input_matched(node, pub):
    """Whether the graph shows the node's `keypoints` and `matches` writers and a reader of our
    image publisher `pub`."""
    return (node.count_publishers("keypoints") > 0 and node.count_publishers("matches") > 0
            and pub.get_subscription_count() > 0)


def mono8_image(sec, pixels):
    """A mono8 `sensor_msgs/Image` of the 2-D uint8 array `pixels`, stamped `sec` seconds."""
    h, w = pixels.shape
    msg = Image()
    msg.header.stamp.sec, msg.header.frame_id = sec, "probe_camera"
    msg.height, msg.width, msg.encoding, msg.step = h, w, "mono8", w
    msg.data = pixels.tobytes()
    return msg
