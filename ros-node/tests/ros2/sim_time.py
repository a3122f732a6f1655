#!/usr/bin/env python3
"""surfcl-node under `use_sim_time:=true` follows `/clock` as a ROS 2 node does (rclpy, Fast DDS).

We publish `/clock` (`rosgraph_msgs/msg/Clock`, best effort with a depth of one, as
`ros2 bag play --clock` does) at a simulated time near 1,000,000 s, far from the wall clock.
Checks: the graph has one type on `/clock`, `rosgraph_msgs/msg/Clock` (a reader of another type
would add its own); the node's `/clock` reader belongs to the node and announces the type hash
rosidl generated; the node's `/diagnostics` reports are stamped with the simulated time.
Prints one JSON line; exits non-zero with {"ok": false, "error": ...} at the first failure.
"""
import sys

from diagnostic_msgs.msg import DiagnosticArray
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock

from probe import Failed, node_probe_main, spin_until
from type_hashes import rosidl_hash

SIM_START_S = 1_000_000


def main():
    return node_probe_main(__doc__, "surfcl_sim_time_probe", run)


def run(node, args, deadline, result):
    clock_qos = QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT)
    clock_pub = node.create_publisher(Clock, "/clock", clock_qos)
    sim = {"ns": SIM_START_S * 10**9}

    def tick():
        # 100 ms of simulated time every 50 ms of wall time.
        sim["ns"] += 100_000_000
        msg = Clock()
        msg.clock.sec, msg.clock.nanosec = divmod(sim["ns"], 10**9)
        clock_pub.publish(msg)

    node.create_timer(0.05, tick)
    stamps = []
    node.create_subscription(DiagnosticArray, "/diagnostics",
                             lambda m: stamps.append(m.header.stamp.sec + m.header.stamp.nanosec * 1e-9),
                             10)

    def node_clock_readers():
        return [e for e in node.get_subscriptions_info_by_topic("/clock")
                if e.node_name == args.node]

    spin_until(node, deadline, node_clock_readers, "the node's /clock reader in the graph")
    types = dict(node.get_topic_names_and_types())
    result["clock_types"] = types.get("/clock")
    if types.get("/clock") != ["rosgraph_msgs/msg/Clock"]:
        raise Failed(f"/clock types in the graph: {types.get('/clock')}")
    hashes = sorted({str(e.topic_type_hash) for e in node_clock_readers()})
    result["clock_type_hash"] = hashes
    want = rosidl_hash("rosgraph_msgs/msg/Clock")
    if hashes != [want]:
        raise Failed(f"the node's /clock reader reports {hashes}, rosidl has {want}")

    # The first reports may predate the first /clock message the node received: wait for one
    # stamped with the simulated time.
    def simulated():
        return any(SIM_START_S <= s < SIM_START_S + 10_000 for s in stamps)

    spin_until(node, deadline, simulated, "a /diagnostics report stamped with /clock's time")
    result["diagnostics_stamps"] = [round(s, 1) for s in stamps[-3:]]
    result["simulated_now"] = round(sim["ns"] * 1e-9, 1)


if __name__ == "__main__":
    sys.exit(main())
