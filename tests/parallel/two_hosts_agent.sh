#!/usr/bin/env bash
# rsh agent for parallel.mpi.two_hosts: mpirun calls it as `AGENT HOST COMMAND...` to start
# its daemon (orted) on HOST. Each "host" is an address of a network namespace on this
# machine, so the command runs in that namespace instead of over ssh. The mapping comes
# from TWO_HOSTS_MAP ("ADDRESS=NAMESPACE ...", set by two_hosts.sh); the environment,
# OMPI_ALLOW_RUN_AS_ROOT included, is inherited from mpirun.
set -euo pipefail

namespace_of() {
  local host=$1 pair
  for pair in ${TWO_HOSTS_MAP:?TWO_HOSTS_MAP is not set}; do
    if [[ "${pair%%=*}" == "$host" ]]; then
      echo "${pair#*=}"
      return 0
    fi
  done
  echo "two_hosts_agent: no namespace for host '$host'" >&2
  return 1
}

host=$1
shift
ns=$(namespace_of "$host")
exec ip netns exec "$ns" sh -c "$*"
