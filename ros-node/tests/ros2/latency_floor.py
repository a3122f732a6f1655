#!/usr/bin/env python3
"""The floor under latency.py's figures: rclpy to rclpy, no surfcl-node.

Two processes on the same ROS 2 (default QoS and settings, no XML): `pub` publishes
sensor_msgs/Image frames of the given size and encoding on `floor_image` at --hz, `sub`
subscribes to them raw, as latency.py subscribes to the node's outputs, and prints the same
report (latency = callback time - source timestamp). What a sample of that size costs between
two default ROS 2 processes on this machine bounds what any publisher can reach.
Usage: latency_floor.py sub --frames N [--settle S] & latency_floor.py pub --frames N
"""
import argparse
import sys
import time

import rclpy
from rclpy.qos import QoSProfile, ReliabilityPolicy, HistoryPolicy
from sensor_msgs.msg import Image

from latency_report import percentile, print_report

TOPIC = "floor_image"


def qos():
    return QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE,
                      history=HistoryPolicy.KEEP_LAST)


def publish(node, args):
    pub = node.create_publisher(Image, TOPIC, qos())
    deadline = time.monotonic() + args.discovery_timeout
    while pub.get_subscription_count() == 0 and time.monotonic() < deadline:
        rclpy.spin_once(node, timeout_sec=0.05)
    if pub.get_subscription_count() == 0:
        print("floor: no subscriber", file=sys.stderr)
        return 1
    time.sleep(1.0)
    width, height = (int(v) for v in args.size.split("x"))
    channels = 3 if args.encoding == "rgb8" else 1
    msg = Image()
    msg.height, msg.width, msg.encoding = height, width, args.encoding
    msg.step = width * channels
    msg.data = bytes(width * height * channels)
    next_t = time.monotonic()
    for _ in range(args.frames):
        now = time.time_ns()
        msg.header.stamp.sec, msg.header.stamp.nanosec = now // 10**9, now % 10**9
        pub.publish(msg)
        next_t += 1.0 / args.hz
        while time.monotonic() < next_t:
            rclpy.spin_once(node, timeout_sec=max(0.0, min(0.01, next_t - time.monotonic())))
    time.sleep(args.settle)
    return 0


def subscribe(node, args):
    got = []

    def callback(_raw, info):
        got.append((time.time_ns() - info["source_timestamp"]) / 1e6)

    node.create_subscription(Image, TOPIC, callback, qos(), raw=True)
    deadline = time.monotonic() + args.discovery_timeout + args.frames / args.hz + args.settle
    while len(got) < args.frames and time.monotonic() < deadline:
        rclpy.spin_once(node, timeout_sec=0.05)
    result = {"ok": True, "size": args.size, "frames_sent": args.frames, "topics": {
        TOPIC: {"count": len(got), "lost": args.frames - len(got)}}}
    if got:
        result["topics"][TOPIC].update(
            p50_ms=round(percentile(got, 0.5), 2), max_ms=round(max(got), 2),
            all_ms=[round(v, 1) for v in got])
    print_report(result, args.size)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("role", choices=["pub", "sub"])
    ap.add_argument("--size", default="1920x1080")
    ap.add_argument("--encoding", default="rgb8", choices=["rgb8", "mono8"])
    ap.add_argument("--frames", type=int, default=12)
    ap.add_argument("--hz", type=float, default=2.0)
    ap.add_argument("--discovery-timeout", type=float, default=30.0)
    ap.add_argument("--settle", type=float, default=3.0)
    args = ap.parse_args()
    rclpy.init()
    node = rclpy.create_node(f"surfcl_latency_floor_{args.role}")
    try:
        return publish(node, args) if args.role == "pub" else subscribe(node, args)
    finally:
        node.destroy_node()
        rclpy.shutdown()


if __name__ == "__main__":
    sys.exit(main())
