"""The launch file passes only what its user set (no ROS installation needed: `launch` and
`launch_ros` are stubbed). Run: python3 -m unittest discover ros-node/ament/surfcl_node/test
"""
import importlib.util
import pathlib
import sys
import types
import unittest

LAUNCH_FILE = pathlib.Path(__file__).resolve().parent.parent / "launch" / "surfcl.launch.py"


class Config:
    """LaunchConfiguration: performs to the value the test set, or the declared default."""
    values = {}
    defaults = {}

    def __init__(self, name):
        self.name = name

    def perform(self, _context):
        return Config.values.get(self.name, Config.defaults.get(self.name, ""))


class Declare:
    def __init__(self, name, default_value="", description=""):
        Config.defaults[name] = default_value


class NodeStub:
    def __init__(self, **kwargs):
        self.kwargs = kwargs


def load_launch_module():
    launch = types.ModuleType("launch")
    launch.LaunchDescription = lambda entities: entities
    actions = types.ModuleType("launch.actions")
    actions.DeclareLaunchArgument = Declare
    actions.OpaqueFunction = lambda function: function
    substitutions = types.ModuleType("launch.substitutions")
    substitutions.LaunchConfiguration = Config
    launch_ros = types.ModuleType("launch_ros")
    ros_actions = types.ModuleType("launch_ros.actions")
    ros_actions.Node = NodeStub
    sys.modules.update({
        "launch": launch, "launch.actions": actions, "launch.substitutions": substitutions,
        "launch_ros": launch_ros, "launch_ros.actions": ros_actions,
    })
    spec = importlib.util.spec_from_file_location("surfcl_launch", LAUNCH_FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class LaunchArguments(unittest.TestCase):
    def node_for(self, **values):
        module = load_launch_module()
        entities = module.generate_launch_description()
        Config.values = values
        [node] = entities[-1](None)
        return node.kwargs

    def test_nothing_set_passes_no_parameters(self):
        node = self.node_for()
        self.assertEqual(node["parameters"], [])
        self.assertEqual(node["arguments"], [])
        self.assertEqual(node["ros_arguments"], [])

    def test_params_file_alone_is_not_overridden(self):
        node = self.node_for(params_file="/tmp/mine.yaml")
        self.assertEqual(node["parameters"], ["/tmp/mine.yaml"])

    def test_set_arguments_pass_typed_after_the_file(self):
        node = self.node_for(params_file="/tmp/mine.yaml", max_keypoints="500", lazy="True",
                             use_sim_time="true", backend="cpu", localhost_only="true",
                             log_level="debug")
        self.assertEqual(node["parameters"], ["/tmp/mine.yaml", {
            "backend": "cpu", "max_keypoints": 500, "lazy": True, "use_sim_time": True}])
        self.assertEqual(node["arguments"], ["--localhost-only"])
        self.assertEqual(node["ros_arguments"], ["--log-level", "debug"])

    def test_bad_boolean_is_refused(self):
        with self.assertRaises(ValueError):
            self.node_for(debug_image="yes")


if __name__ == "__main__":
    unittest.main()
