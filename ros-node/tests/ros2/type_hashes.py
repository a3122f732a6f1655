#!/usr/bin/env python3
"""The type hashes of surfcl-node's endpoints, as a ROS 2 node sees them (rclpy, Fast DDS).

From Iron on, an endpoint announces its type's REP-2016 hash in discovery (USER_DATA
`typehash=RIHS01_...;`), and the graph reports it as `topic_type_hash` (`ros2 topic info -v`);
an endpoint that announces none reports "INVALID". For each of the node's publishers and
subscriptions, its parameter services' request readers and reply writers, and its participant's
`ros_discovery_info` writer, the reported hash must equal the one rosidl generated for the type
in this installation (`share/<package>/<msg|srv>/<Type>.json`). Fast DDS logs a warning when an
endpoint's USER_DATA holds no parsable hash; the caller checks stderr for it.
Prints one JSON line; exits non-zero with {"ok": false, "error": ...} at the first failure.
"""
import json
import os
import sys

from ament_index_python.packages import get_package_share_directory
from sensor_msgs.msg import Image

from probe import Failed, node_probe_main, outputs_and_input_matched, spin_until

# (graph query, topic, no_mangle, the type's ROS name)
ENDPOINTS = [
    ("publishers", "/keypoints", False, "surfcl_msgs/msg/KeypointArray"),
    ("publishers", "/matches", False, "surfcl_msgs/msg/MatchArray"),
    ("publishers", "/debug_image", False, "sensor_msgs/msg/Image"),
    ("publishers", "/diagnostics", False, "diagnostic_msgs/msg/DiagnosticArray"),
    ("publishers", "/rosout", False, "rcl_interfaces/msg/Log"),
    ("publishers", "/parameter_events", False, "rcl_interfaces/msg/ParameterEvent"),
    ("subscriptions", "/image", False, "sensor_msgs/msg/Image"),
    ("subscriptions", "/clock", False, "rosgraph_msgs/msg/Clock"),
] + [
    endpoint
    for service, srv in [
        ("get_parameters", "GetParameters"),
        ("get_parameter_types", "GetParameterTypes"),
        ("set_parameters", "SetParameters"),
        ("set_parameters_atomically", "SetParametersAtomically"),
        ("list_parameters", "ListParameters"),
        ("describe_parameters", "DescribeParameters"),
    ]
    # A service's request reader and reply writer both announce the service's hash.
    for endpoint in [
        ("subscriptions", f"rq/{{node}}/{service}Request", True, f"rcl_interfaces/srv/{srv}"),
        ("publishers", f"rr/{{node}}/{service}Reply", True, f"rcl_interfaces/srv/{srv}"),
    ]
]
DISCOVERY_INFO = "rmw_dds_common/msg/ParticipantEntitiesInfo"


def main():
    return node_probe_main(__doc__, "surfcl_type_hash_probe", run)


def rosidl_hash(ros_type):
    """The hash rosidl generated for `ros_type` (`package/msg/Type`) in this installation: the
    ROS wheels' packages are in the venv's prefix, `surfcl_msgs` in the ament index (colcon)."""
    package, kind, name = ros_type.split("/")
    share = os.path.join(sys.prefix, "share", package)
    if not os.path.isdir(share):
        share = get_package_share_directory(package)
    with open(os.path.join(share, kind, f"{name}.json")) as f:
        return json.load(f)["type_hashes"][0]["hash_string"]


def run(node, args, deadline, result):
    pub = node.create_publisher(Image, "image", 10)
    spin_until(node, deadline, lambda: outputs_and_input_matched(node, pub)
               and args.node in node.get_node_names(), "discovery of the node")
    reported = {}
    prefixes = set()
    for query, topic, no_mangle, ros_type in ENDPOINTS:
        topic = topic.format(node=args.node)
        getter = getattr(node, f"get_{query}_info_by_topic")

        def ours():
            return [e for e in getter(topic, no_mangle) if e.node_name == args.node]

        spin_until(node, deadline, ours, f"the node's {query} on {topic}")
        infos = ours()
        prefixes.update(bytes(e.endpoint_gid[:12]) for e in infos)
        reported[topic] = sorted({str(e.topic_type_hash) for e in infos})
        want = rosidl_hash(ros_type)
        if reported[topic] != [want]:
            result["reported"] = reported
            raise Failed(f"{topic} ({ros_type}) reports {reported[topic]}, rosidl has {want}")
    # ros_discovery_info belongs to no node: the node's is the one of its participant.
    if len(prefixes) != 1:
        raise Failed(f"the node's endpoints are in {len(prefixes)} participants")
    info = [e for e in node.get_publishers_info_by_topic("ros_discovery_info", True)
            if bytes(e.endpoint_gid[:12]) in prefixes]
    reported["ros_discovery_info"] = sorted({str(e.topic_type_hash) for e in info})
    if reported["ros_discovery_info"] != [rosidl_hash(DISCOVERY_INFO)]:
        result["reported"] = reported
        raise Failed(f"ros_discovery_info reports {reported['ros_discovery_info']}")
    result["reported"] = reported


if __name__ == "__main__":
    sys.exit(main())
