#!/bin/sh
# Launcher for each rank of parallel.mpi.two_hosts: records the rank's network namespace
# (as /proc/self/ns/net names it) in $TWO_HOSTS_EVIDENCE/rank<N>, then becomes the program.
set -eu
readlink /proc/self/ns/net >"${TWO_HOSTS_EVIDENCE:?}/rank${OMPI_COMM_WORLD_RANK:?}"
exec "$@"
