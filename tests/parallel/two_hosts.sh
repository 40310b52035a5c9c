#!/usr/bin/env bash
# parallel.mpi.two_hosts: a 2-rank DDP job of ringgrad-train over TCP between two "hosts"
# trains exactly like the single-host run.
#
# The two hosts are network namespaces on this machine, joined by a veth pair
# (10.77.0.1/24 and 10.77.0.2/24); each has only its loopback and its end of the veth.
# mpirun runs in the first namespace with --host 10.77.0.1:1,10.77.0.2:1 and reaches the
# second through an rsh agent (two_hosts_agent.sh) that runs its daemon with `ip netns
# exec`. --mca btl tcp,self and the *_if_include options confine both MPI traffic and the
# daemons' out-of-band channel to the veth subnet.
#
# It proves:
#   - the ranks really ran apart: each rank records /proc/self/ns/net (two_hosts_rank.sh),
#     and rank 0 must be in the first namespace, rank 1 in the second;
#   - their traffic crossed the veth: its byte counters grow, in both directions, by at
#     least the checkpoint's size (the all-reduces of 32 steps send far more);
#   - the result is right: the checkpoint is bit-identical (cmp) to the one of
#     `--backend local --workers 2` (with two ranks an all-reduce adds the same two numbers).
#
# Usage: two_hosts.sh MPIEXEC RINGGRAD_TRAIN   (as root: ctest sets OMPI_ALLOW_RUN_AS_ROOT*)
# Exits 77 (skipped) with a one-line reason when the namespaces or the veth pair cannot be
# set up (not root, no CAP_SYS_ADMIN, in a container, no iproute2, no veth driver).
set -euo pipefail

mpiexec=$1 train=$2

# `ip netns add` bind-mounts /run/netns and a file per namespace under it. In a private
# mount namespace of this test's own, those mounts vanish with the test whatever happens,
# so a chroot or container is never left with a busy /run/netns.
if [[ -z "${TWO_HOSTS_PRIVATE_MOUNTS:-}" ]]; then
  if ! unshare --mount --propagation private true 2>/dev/null; then
    echo "SKIP parallel.mpi.two_hosts: cannot create a private mount namespace (unshare --mount)"
    exit 77
  fi
  exec unshare --mount --propagation private env TWO_HOSTS_PRIVATE_MOUNTS=1 bash "$0" "$@"
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ns_a=ringgrad-2h-$$-a ns_b=ringgrad-2h-$$-b
addr_a=10.77.0.1 addr_b=10.77.0.2 subnet=10.77.0.0/24
flags=(--data synthetic --model mlp --epochs 2 --parallel ddp --batch-size 32 --threads 1)
export RINGGRAD_COLLECTIVE_TIMEOUT_S=${RINGGRAD_COLLECTIVE_TIMEOUT_S:-60}
work=$(mktemp -d)
created=()
child=

# delete_namespace NS: kills whatever still runs in it (mpirun, orted, ranks), then deletes
# it (and so its end of the veth pair, which takes the other end with it).
delete_namespace() {
  local pids
  pids=$(ip netns pids "$1" 2>/dev/null || true)
  if [[ -n "$pids" ]]; then
    # shellcheck disable=SC2086  # one pid per word
    kill -9 $pids 2>/dev/null || true
  fi
  ip netns del "$1" 2>/dev/null || true
}

cleanup() {
  local ns
  if [[ -n "$child" ]]; then
    kill -TERM "$child" 2>/dev/null || true  # a timeout(1), which passes it on
  fi
  for ns in "${created[@]}"; do
    delete_namespace "$ns"
  done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ctest ends a test that runs past its TIMEOUT with SIGKILL, which no trap sees: the runs
# have their own, shorter limits (100 s + 50 s < 180 s), and namespaces left by a run that
# was killed anyway (its pid in their name is gone) are deleted here.
delete_stale_namespaces() {
  local ns
  for ns in $(ip netns list 2>/dev/null | cut -d' ' -f1); do
    if [[ "$ns" =~ ^ringgrad-2h-([0-9]+)-[ab]$ ]] && ! kill -0 "${BASH_REMATCH[1]}" 2>/dev/null; then
      delete_namespace "$ns"
    fi
  done
}

# waiting COMMAND...: runs it in the background and waits for it, so that a signal to this
# script runs the traps at once (bash defers them until a foreground command ends).
waiting() {
  "$@" &
  child=$!
  wait "$child"
  local status=$?
  child=
  return "$status"
}

skip() {
  echo "SKIP parallel.mpi.two_hosts: $*"
  exit 77
}

# setup WHAT COMMAND...: runs a set-up step; if it fails, skips the test saying why.
setup() {
  local what=$1
  shift
  if ! "$@" >"$work/setup.err" 2>&1; then
    skip "cannot $what: $(head -1 "$work/setup.err")"
  fi
}

make_namespace() {
  local ns=$1
  setup "create network namespace $ns (needs root and CAP_SYS_ADMIN)" ip netns add "$ns"
  created+=("$ns")
  setup "bring up loopback in $ns" ip -n "$ns" link set lo up
}

set_up_hosts() {
  command -v ip >/dev/null 2>&1 || skip "no ip command (iproute2)"
  delete_stale_namespaces
  make_namespace "$ns_a"
  make_namespace "$ns_b"
  setup "create a veth pair" ip link add veth0 netns "$ns_a" type veth peer name veth1 netns "$ns_b"
  setup "address veth0" ip -n "$ns_a" addr add "$addr_a/24" dev veth0
  setup "address veth1" ip -n "$ns_b" addr add "$addr_b/24" dev veth1
  setup "bring up veth0" ip -n "$ns_a" link set veth0 up
  setup "bring up veth1" ip -n "$ns_b" link set veth1 up
}

# veth_bytes NS DEV DIRECTION: the interface's rx or tx byte counter.
veth_bytes() {
  ip netns exec "$1" cat "/sys/class/net/$2/statistics/$3_bytes"
}

net_ns_of() {
  ip netns exec "$1" readlink /proc/self/ns/net
}

run_two_hosts() {
  mkdir -p "$work/evidence"
  TWO_HOSTS_MAP="$addr_a=$ns_a $addr_b=$ns_b" TWO_HOSTS_EVIDENCE="$work/evidence" \
    waiting timeout -k 5 100 ip netns exec "$ns_a" \
    "$mpiexec" -n 2 --host "$addr_a:1,$addr_b:1" \
    --mca plm_rsh_agent "$here/two_hosts_agent.sh" \
    --mca btl tcp,self --mca btl_tcp_if_include "$subnet" --mca oob_tcp_if_include "$subnet" \
    -x TWO_HOSTS_EVIDENCE -x RINGGRAD_COLLECTIVE_TIMEOUT_S \
    "$here/two_hosts_rank.sh" "$train" "${flags[@]}" --out "$work/two_hosts" \
    >"$work/two_hosts.log" 2>&1 || { cat "$work/two_hosts.log"; echo "FAIL: the two-host run failed"; exit 1; }
}

run_local() {
  waiting timeout -k 5 50 "$train" "${flags[@]}" --backend local --workers 2 --out "$work/local" >"$work/local.log" 2>&1 ||
    { cat "$work/local.log"; echo "FAIL: the local run failed"; exit 1; }
}

check_ranks_apart() {
  local want_a want_b got_0 got_1
  want_a=$(net_ns_of "$ns_a") want_b=$(net_ns_of "$ns_b")
  got_0=$(cat "$work/evidence/rank0") got_1=$(cat "$work/evidence/rank1")
  echo "rank 0 in $got_0 ($ns_a: $want_a), rank 1 in $got_1 ($ns_b: $want_b)," \
       "this script in $(readlink /proc/self/ns/net)"
  if [[ "$got_0" != "$want_a" || "$got_1" != "$want_b" || "$want_a" == "$want_b" ]]; then
    echo "FAIL: the ranks did not run in the two namespaces"
    exit 1
  fi
}

# check_veth_traffic A_RX_BEFORE B_RX_BEFORE: each end received at least a checkpoint's worth.
check_veth_traffic() {
  local min a_rx b_rx
  min=$(stat -c %s "$work/two_hosts/checkpoint.safetensors")
  a_rx=$(( $(veth_bytes "$ns_a" veth0 rx) - $1 ))
  b_rx=$(( $(veth_bytes "$ns_b" veth1 rx) - $2 ))
  echo "veth traffic: $addr_b -> $addr_a $a_rx bytes, $addr_a -> $addr_b $b_rx bytes (checkpoint $min bytes)"
  if (( a_rx < min || b_rx < min )); then
    echo "FAIL: too little traffic over the veth pair for a DDP job"
    exit 1
  fi
}

main() {
  local a_rx0 b_rx0
  set_up_hosts
  a_rx0=$(veth_bytes "$ns_a" veth0 rx) b_rx0=$(veth_bytes "$ns_b" veth1 rx)
  run_two_hosts
  run_local
  check_ranks_apart
  check_veth_traffic "$a_rx0" "$b_rx0"
  echo "two hosts: $(tail -1 "$work/two_hosts.log")"
  echo "local:     $(tail -1 "$work/local.log")"
  cmp "$work/two_hosts/checkpoint.safetensors" "$work/local/checkpoint.safetensors"
  echo "identical checkpoints"
}

main
