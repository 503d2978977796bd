#!/bin/sh
# One server and three workers on this host under Open MPI: dmlps-launch
# makes rank 0 the server; the workers find it on 127.0.0.1. Arguments go to
# the server (and after --worker-args to the workers), e.g.
#   share/dmlps/launch/mpirun-example.sh --policy lbbsp --worker-args --threads 2
# Across hosts, name them and tell the workers where rank 0 runs (Open MPI
# places rank 0 on the first host given):
#   mpirun -np 4 --host a,b,c,d dmlps-launch --server-host a --policy bsp
set -eu
root=""
[ "$(id -u)" -ne 0 ] || root=--allow-run-as-root
# shellcheck disable=SC2086
exec mpirun --oversubscribe $root --bind-to none -np "${NP:-4}" "$(dirname "$0")/dmlps-launch" \
  --policy bsp --model mlp:128 --target-accuracy 0.84 --eval-every 25 "$@"
