"""Launches surfcl-node beside a camera driver.

    ros2 launch surfcl_node surfcl.launch.py camera_topic:=/camera/image_raw backend:=opencl
    ros2 launch surfcl_node surfcl.launch.py params_file:=/path/to/surfcl.yaml namespace:=/robot

The node subscribes `image` (remapped to `camera_topic`) and publishes `keypoints`, `matches`,
`diagnostics` (and `debug_image` with debug_image:=true) in `namespace`.
"""
import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue


def generate_launch_description():
    default_params = os.path.join(get_package_share_directory("surfcl_node"), "config", "surfcl.yaml")
    args = [
        DeclareLaunchArgument("camera_topic", default_value="/camera/image_raw",
                              description="sensor_msgs/Image topic of the camera"),
        DeclareLaunchArgument("namespace", default_value="", description="namespace of the node"),
        DeclareLaunchArgument("node_name", default_value="surfcl_node"),
        DeclareLaunchArgument("params_file", default_value=default_params,
                              description="YAML file with the node's parameters"),
        DeclareLaunchArgument("backend", default_value="auto", description="auto | opencl | cpu"),
        DeclareLaunchArgument("device", default_value="", description="OpenCL device index or name part"),
        DeclareLaunchArgument("max_keypoints", default_value="10000"),
        DeclareLaunchArgument("image_reliability", default_value="best_effort",
                              description="best_effort | reliable (must match the camera's publisher)"),
        DeclareLaunchArgument("output_reliability", default_value="reliable",
                              description="reliable | best_effort (keypoints, matches, debug_image)"),
        DeclareLaunchArgument("debug_image", default_value="false"),
    ]
    node = Node(
        package="surfcl_node",
        executable="surfcl-node",
        name=LaunchConfiguration("node_name"),
        namespace=LaunchConfiguration("namespace"),
        output="screen",
        remappings=[("image", LaunchConfiguration("camera_topic"))],
        parameters=[
            LaunchConfiguration("params_file"),
            {
                "backend": LaunchConfiguration("backend"),
                "device": ParameterValue(LaunchConfiguration("device"), value_type=str),
                "max_keypoints": ParameterValue(LaunchConfiguration("max_keypoints"), value_type=int),
                "image_reliability": LaunchConfiguration("image_reliability"),
                "output_reliability": LaunchConfiguration("output_reliability"),
                "debug_image": ParameterValue(LaunchConfiguration("debug_image"), value_type=bool),
            },
        ],
    )
    return LaunchDescription(args + [node])
