#!/bin/sh
# Runs surfcl-node and a ROS 2 Python script together in a private network and PID namespace
# (nothing leaves the machine; killing this script's namespace ends both).
# Usage: run-netns.sh DISTRO NODE_BIN SCRIPT [script args...]   (DISTRO: kilted, jazzy or
#   cyclone, the Cyclone DDS peer's venv)
#   env: DOMAIN (ROS_DOMAIN_ID, default 140), NODE_ARGS (extra node arguments, word-split)
# Must itself run inside `unshare --net --pid --fork --mount-proc --kill-child`.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
distro=$1 node_bin=$2 script=$3
shift 3
ip link set lo up
set +u # the venv's and colcon's setup scripts read unset variables
if [ "$distro" = cyclone ]; then
    . "$here/../peer/.venv/bin/activate" # Cyclone DDS, no ROS (ros-node/tests/peer/setup.sh)
else
    . "$here/.venv-$distro/bin/activate"
    . "$here/.colcon-$distro/install/local_setup.sh"
fi
set -u
export ROS_DOMAIN_ID="${DOMAIN:-140}" RMW_IMPLEMENTATION=rmw_fastrtps_cpp \
    ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST
# shellcheck disable=SC2086
"$node_bin" --domain-id "$ROS_DOMAIN_ID" ${NODE_ARGS:-} &
node_pid=$!
rc=0
python "$script" "$@" || rc=$?
# The namespace's UDP counters: receive buffer overflows are what large samples suffer from.
awk '/^Udp:/ { if (!h) { split($0, n); h = 1 } else { for (i = 2; i <= NF; i++) printf "%s=%s ", n[i], $i; print "" } }' \
    /proc/net/snmp >&2
# SIGINT ends the node cleanly (exit status 0) within a few seconds.
kill -INT "$node_pid" 2>/dev/null || true
( sleep 15; kill -KILL "$node_pid" 2>/dev/null ) &
killer=$!
node_rc=0
wait "$node_pid" || node_rc=$?
kill "$killer" 2>/dev/null || true
echo "surfcl-node exit status after SIGINT: $node_rc" >&2
[ "$node_rc" -eq 0 ] || [ "$rc" -ne 0 ] || rc=3
exit $rc
