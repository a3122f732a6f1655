#!/usr/bin/env python3
"""surfcl-node under `use_sim_time:=true` follows `/clock` as a ROS 2 node does (rclpy, Fast DDS).

We publish `/clock` (`rosgraph_msgs/msg/Clock`, best effort with a depth of one, as
`ros2 bag play --clock` does) at a simulated time near 1,000,000 s, far from the wall clock.
Checks: the graph has one type on `/clock`, `rosgraph_msgs/msg/Clock` (a reader of another type
would add its own); the node's `/clock` reader belongs to the node and announces the type hash
rosidl generated; the node's `/diagnostics` reports are stamped with the simulated time.

With `--toggle` the node starts without `use_sim_time`, and the probe turns it on and off through
the node's `set_parameters` service, as `ros2 param set` does. Checked besides: the node reads no
`/clock` and stamps with the wall clock while it is off (rclcpp and rclpy subscribe to `/clock`
only while it is on), and its reader is gone and its stamps are wall-clock time again once it is
turned off (no /clock reader in the graph, none owned by the node).
Prints one JSON line; exits non-zero with {"ok": false, "error": ...} at the first failure.
"""
import sys
import time

from diagnostic_msgs.msg import DiagnosticArray
from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
from rcl_interfaces.srv import SetParameters
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock

from probe import Failed, call_service, node_probe_main, spin_for, spin_until
from type_hashes import rosidl_hash

SIM_START_S = 1_000_000


def main():
    def toggle(ap):
        ap.add_argument("--toggle", action="store_true",
                        help="the node starts without use_sim_time; turn it on, then off")

    return node_probe_main(__doc__, "surfcl_sim_time_probe", run, toggle)


def set_use_sim_time(node, target, deadline, on):
    """Sets the node's `use_sim_time` through its `set_parameters` service."""
    p = Parameter(name="use_sim_time",
                  value=ParameterValue(type=ParameterType.PARAMETER_BOOL, bool_value=on))
    reply = call_service(node, deadline, SetParameters, f"{target}/set_parameters",
                         SetParameters.Request(parameters=[p])).results[0]
    if not reply.successful:
        raise Failed(f"use_sim_time:={on} refused: {reply.reason}")


def wall_clock(stamp):
    """Whether `stamp` (seconds) is the wall clock's time (within a minute)."""
    return abs(stamp - time.time()) < 60


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

    if args.toggle:
        # Off: the node reads no /clock (we only publish there, so any reader is the node's;
        # counted by topic, which does not wait for the node's entity list) and stamps with
        # the wall clock. A second after its first report, a reader would be discovered.
        spin_until(node, deadline, lambda: stamps, "a /diagnostics report")
        spin_for(node, 1.0)
        result["clock_readers_while_off"] = node.count_subscribers("/clock")
        if node.count_subscribers("/clock"):
            raise Failed("the node reads /clock without use_sim_time")
        if not wall_clock(stamps[-1]):
            raise Failed(f"a report without use_sim_time is stamped {stamps[-1]}, not wall time")
        set_use_sim_time(node, args.node, deadline, True)

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

    if args.toggle:
        set_use_sim_time(node, args.node, deadline, False)
        # The node drops its reader (the DDS endpoint leaves the graph) and takes it off its
        # entities.
        spin_until(node, deadline,
                   lambda: node.count_subscribers("/clock") == 0 and not node_clock_readers(),
                   "the node's /clock reader to go after use_sim_time:=false")
        since = len(stamps)
        spin_until(node, deadline, lambda: any(wall_clock(s) for s in stamps[since:]),
                   "a /diagnostics report stamped with the wall clock again")
        result["stamp_after_off"] = round(stamps[-1], 1)


if __name__ == "__main__":
    sys.exit(main())
