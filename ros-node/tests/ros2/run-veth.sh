#!/bin/sh
# Two machines on one host: network namespaces "node" and "sub" joined by a veth pair
# (10.213.0.1/24 and 10.213.0.2/24, nothing else, no loopback path between them). surfcl-node
# runs in the first, a ROS 2 Python script in the second, both with the discovery range RANGE.
# Usage: run-veth.sh DISTRO NODE_BIN RANGE SCRIPT [script args...]
#   env: DOMAIN (ROS_DOMAIN_ID, default 150), NODE_ARGS (extra node arguments, word-split),
#   NODE_STATIC_PEERS (the node's ROS_STATIC_PEERS; the subscriber names none)
# Must itself run inside `unshare --net --pid --fork --mount-proc --kill-child` (a private
# mount namespace, for `ip netns`).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
distro=$1 node_bin=$2 range=$3 script=$4
shift 4
# `ip netns` keeps its names in /run/netns: a tmpfs of this mount namespace keeps them here.
mkdir -p /run/netns
mount -t tmpfs surfcl-netns /run/netns
ip netns add surfcl_node
ip netns add surfcl_sub
ip link add surfcl_v0 type veth peer name surfcl_v1
ip link set surfcl_v0 netns surfcl_node
ip link set surfcl_v1 netns surfcl_sub
ip -n surfcl_node addr add 10.213.0.1/24 dev surfcl_v0
ip -n surfcl_sub addr add 10.213.0.2/24 dev surfcl_v1
for ns_dev in surfcl_node:surfcl_v0 surfcl_sub:surfcl_v1; do
    ns=${ns_dev%%:*} dev=${ns_dev#*:}
    ip -n "$ns" link set lo up
    ip -n "$ns" link set "$dev" up
    # DDS discovery is IP multicast (239.255.0.1): route it to the link.
    ip -n "$ns" route add 224.0.0.0/4 dev "$dev"
done
export ROS_DOMAIN_ID="${DOMAIN:-150}" RMW_IMPLEMENTATION=rmw_fastrtps_cpp \
    ROS_AUTOMATIC_DISCOVERY_RANGE="$range"
# shellcheck disable=SC2086
ip netns exec surfcl_node env ROS_STATIC_PEERS="${NODE_STATIC_PEERS:-}" "$node_bin" --domain-id "$ROS_DOMAIN_ID" ${NODE_ARGS:-} &
node_pid=$!
rc=0
ip netns exec surfcl_sub sh -c '
    set +u
    . "$1/.venv-$2/bin/activate"
    . "$1/.colcon-$2/install/local_setup.sh"
    shift 2
    exec python "$@"' sh "$here" "$distro" "$script" "$@" || rc=$?
# Bytes that crossed the link, as the node's side counts them.
ip -n surfcl_node -s link show surfcl_v0 >&2 || true
kill -INT "$node_pid" 2>/dev/null || true
wait "$node_pid" || true
exit $rc
