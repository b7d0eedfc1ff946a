#!/usr/bin/env bash
# Emulated hosts on one machine, for testing what crosses a network (needs root).
#
#   emulated-hosts.sh up N [RATE]   N hosts h0..h(N-1): each a network namespace strider-hI with
#                                   address 10.77.0.(I+1) on a bridge (the machine itself is
#                                   10.77.0.254); RATE (e.g. 1gbit, tc's units) limits each
#                                   host's link both ways with a token bucket (tbf)
#   emulated-hosts.sh down          removes them
#   emulated-hosts.sh rate RATE     sets every host's link limit (tc units, or none) in place
#   emulated-hosts.sh run HOST CMD  runs CMD on HOST: in its network namespace, with its own
#                                   hostname (UTS namespace) and its own /dev/shm (mount namespace):
#                                   the host's memory, a tmpfs that stays between runs until `down`
#   emulated-hosts.sh kill HOST     the host fails: every process on it is killed (-9) and its
#                                   memory (/dev/shm) is emptied
#   emulated-hosts.sh mpirun ARGS   OpenMPI's mpirun over the hosts: each host's ranks start
#                                   through `run` (the rsh agent), and talk over TCP on the bridge
#                                   between hosts and over shared memory within one
#   emulated-hosts.sh bytes HOST    bytes the host has sent on its link (its veth's tx counter)
#
# Example: emulated-hosts.sh up 2 1gbit; emulated-hosts.sh mpirun --host h0:2,h1:2 -np 4 prog
set -euo pipefail
self=$(readlink -f "$0")
bridge=strider-br
net=10.77.0
memory=/run/strider-emulated  # memory/hI: host hI's /dev/shm

die() { echo "emulated-hosts: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "needs root (network namespaces, a bridge and tc)"
index_of() {  # h3 -> 3
  [[ $1 =~ ^h([0-9]+)$ ]] || die "no emulated host '$1' (hosts are h0, h1, ...)"
  echo "${BASH_REMATCH[1]}"
}

up() {
  local n=$1 rate=${2:-}
  [[ $n =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 200 ] || die "up: the host count must be 1..200, got '$n'"
  # ip netns needs / to be a mount point it can make a slave of: not so in a chroot.
  mountpoint -q / || die "network namespaces cannot be used here: / is not a mount point (a chroot?)"
  down 2>/dev/null || true
  trap 'down 2>/dev/null' ERR  # a half-made set of hosts is removed
  ip link add "$bridge" type bridge
  ip addr add "$net.254/24" dev "$bridge"
  ip link set "$bridge" up
  for ((i = 0; i < n; i++)); do
    local ns=strider-h$i veth=strider-v$i
    ip netns add "$ns"
    ip link add "$veth" type veth peer name eth0 netns "$ns"
    ip link set "$veth" master "$bridge" up
    ip -n "$ns" addr add "$net.$((i + 1))/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
    if [ -n "$rate" ]; then  # both directions: what the host sends (eth0) and receives (veth)
      tc -n "$ns" qdisc add dev eth0 root tbf rate "$rate" burst 256kb latency 50ms
      tc qdisc add dev "$veth" root tbf rate "$rate" burst 256kb latency 50ms
    fi
    mkdir -p "$memory/h$i"
    mount -t tmpfs -o size=25% tmpfs "$memory/h$i"
    grep -q " h$i # strider-emulated$" /etc/hosts || echo "$net.$((i + 1)) h$i # strider-emulated" >> /etc/hosts
  done
  # Entering a namespace needs a mount namespace of its own (not possible in some chroots).
  if ! ip netns exec strider-h0 true 2>/dev/null; then
    down
    die "network namespaces can be made but not entered here (ip netns exec failed; in a chroot the root is not a mount point)"
  fi
}

down() {
  for ns in $(ip netns list | awk '/^strider-h[0-9]+/ {print $1}'); do ip netns delete "$ns"; done
  ip link delete "$bridge" 2>/dev/null || true
  sed -i '/# strider-emulated$/d' /etc/hosts
  for m in "$memory"/h*; do
    [ -d "$m" ] || continue
    umount "$m" 2>/dev/null || true
    rmdir "$m" 2>/dev/null || true
  done
}

# Every host's link limited to $1 (tc units) both ways, or unlimited with "none".
set_rate() {
  local rate=$1 ns i
  for ns in $(ip netns list | awk '/^strider-h[0-9]+/ {print $1}'); do
    i=${ns#strider-h}
    tc -n "$ns" qdisc del dev eth0 root 2>/dev/null || true
    tc qdisc del dev "strider-v$i" root 2>/dev/null || true
    if [ "$rate" != none ]; then
      tc -n "$ns" qdisc add dev eth0 root tbf rate "$rate" burst 256kb latency 50ms
      tc qdisc add dev "strider-v$i" root tbf rate "$rate" burst 256kb latency 50ms
    fi
  done
}

kill_host() {
  local i
  i=$(index_of "$1")
  local pids
  pids=$(ip netns pids "strider-h$i" 2>/dev/null || true)
  [ -z "$pids" ] || kill -9 $pids 2>/dev/null || true
  find "$memory/h$i" -mindepth 1 -delete 2>/dev/null || true
}

run() {
  local host=$1
  shift
  local i
  i=$(index_of "$host")
  ip netns list | grep -q "^strider-h$i\b" || die "host $host is not up (emulated-hosts.sh up N)"
  # ip netns exec gives a mount namespace; unshare adds the UTS one; /dev/shm becomes the host's
  # memory, the same tmpfs for every process started on it, kept when they end (as a host's is).
  [ -d "$memory/h$i" ] || die "host $host has no memory at $memory/h$i (emulated-hosts.sh up N)"
  exec ip netns exec "strider-h$i" unshare --uts --mount --propagation private \
    sh -c 'hostname "$0"; mount --bind "$1" /dev/shm; shift; exec "$@"' "$host" "$memory/h$i" "$@"
}

# OpenMPI calls its rsh agent as: AGENT [options] HOST COMMAND...; options start with '-'.
agent() {
  while [ $# -gt 0 ] && [[ $1 == -* ]]; do shift; done
  [ $# -ge 2 ] || die "agent: expected HOST COMMAND"
  local host=$1
  shift
  run "$host" sh -c "$*"
}

mpirun_hosts() {
  exec mpirun --mca plm_rsh_agent "$self agent" --mca plm_rsh_no_tree_spawn 1 \
    --mca oob_tcp_if_include "$net.0/24" --mca btl_tcp_if_include "$net.0/24" --mca btl self,vader,tcp \
    --bind-to none "$@"
}

bytes() {
  local i
  i=$(index_of "$1")
  cat "/sys/class/net/strider-v$i/statistics/rx_bytes"  # what the host sent arrives on its veth
}

cmd=${1:-}
shift || true
case "$cmd" in
  up) up "$@" ;;
  down) down ;;
  run) run "$@" ;;
  agent) agent "$@" ;;
  mpirun) mpirun_hosts "$@" ;;
  bytes) bytes "$@" ;;
  kill) kill_host "$@" ;;
  rate) set_rate "$@" ;;
  *) die "usage: emulated-hosts.sh up N [RATE] | down | run HOST CMD... | mpirun ARGS... | bytes HOST | kill HOST | rate RATE" ;;
esac
