"""Launches surfcl-node beside a camera driver.

    ros2 launch surfcl_node surfcl.launch.py camera_topic:=/camera/image_raw backend:=opencl
    ros2 launch surfcl_node surfcl.launch.py params_file:=/path/to/surfcl.yaml namespace:=/robot

The node subscribes `image` (remapped to `camera_topic`) and publishes `keypoints`, `matches`,
`debug_image` (with debug_image:=true) in `namespace`, and `/diagnostics`.

Only what the user sets is passed on: a launch argument left empty leaves the parameter to the
params file (when given) and otherwise to the node's default, so that the launch file never
overrides the user's params file with defaults of its own.
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

# name -> (description, type); the value passes through as the parameter when set.
PARAMETERS = {
    "backend": ("auto | opencl | cpu", str),
    "device": ("OpenCL device index or name part", str),
    "max_keypoints": ("strongest-N keypoints per frame", int),
    "debug_image": ("publish debug_image: true | false", bool),
    "lazy": ("process only while an output has a subscriber: true | false", bool),
    "image_reliability": ("best_effort | reliable (must match the camera's publisher)", str),
    "output_reliability": ("reliable | best_effort (keypoints, matches, debug_image)", str),
    "use_sim_time": ("stamp with /clock: true | false", bool),
}


def typed(value, kind):
    if kind is bool:
        if value.lower() not in ("true", "false"):
            raise ValueError(f"expected true or false, got {value!r}")
        return value.lower() == "true"
    return kind(value)


def launch_node(context):
    get = lambda name: LaunchConfiguration(name).perform(context)
    parameters = []
    if get("params_file"):
        parameters.append(get("params_file"))
    overrides = {name: typed(get(name), kind) for name, (_, kind) in PARAMETERS.items() if get(name)}
    if overrides:
        parameters.append(overrides)
    arguments = ["--localhost-only"] if get("localhost_only").lower() == "true" else []
    ros_arguments = ["--log-level", get("log_level")] if get("log_level") else []
    return [
        Node(
            package="surfcl_node",
            executable="surfcl-node",
            name=get("node_name"),
            namespace=get("namespace"),
            output="screen",
            remappings=[("image", LaunchConfiguration("camera_topic"))],
            parameters=parameters,
            arguments=arguments,
            ros_arguments=ros_arguments,
        )
    ]


def generate_launch_description():
    args = [
        DeclareLaunchArgument("camera_topic", default_value="/camera/image_raw",
                              description="sensor_msgs/Image topic of the camera"),
        DeclareLaunchArgument("namespace", default_value="", description="namespace of the node"),
        DeclareLaunchArgument("node_name", default_value="surfcl_node"),
        DeclareLaunchArgument("params_file", default_value="",
                              description="YAML file with the node's parameters (config/surfcl.yaml "
                                          "lists them all with their defaults)"),
        DeclareLaunchArgument("localhost_only", default_value="false",
                              description="discover peers on this host only (true | false); "
                                          "otherwise ROS_AUTOMATIC_DISCOVERY_RANGE decides"),
        DeclareLaunchArgument("log_level", default_value="",
                              description="debug | info | warn | error | fatal"),
    ] + [
        DeclareLaunchArgument(name, default_value="", description=f"{text} (empty: not set)")
        for name, (text, _) in PARAMETERS.items()
    ]
    return LaunchDescription(args + [OpaqueFunction(function=launch_node)])
