#!/usr/bin/env bash
# Fela's two straggler settings: round-robin (in iteration t the worker of
# rank t mod N sleeps) and probabilistic (each step of each worker sleeps
# with some probability): transient stragglers that no fixed assignment
# of work can balance; token scheduling hands work to whoever is free.
NAME=fela-stragglers.sh
SUMMARY='  --delay-ms D  the straggler'"'"'s sleep (default 20)
  --prob P      probability per step in the probabilistic setting (default 0.1)'
. "$(dirname "$0")/common.sh"
delay=20 prob=0.1
option --delay-ms D delay
option --prob P prob
bench_script "$@"
policies=bsp,backup:1,ssp:3,token
bench "round-robin: in iteration t, worker t mod 4 sleeps $delay ms" \
  --workers 4 --slowdown 1 --round-robin-ms "$delay" --policies "$policies" --out "$out/round-robin"
bench "probabilistic: each step sleeps $delay ms with probability $prob" \
  --workers 4 --slowdown 1 --delay-ms "$delay" --delay-prob "$prob" --policies "$policies" \
  --out "$out/probabilistic"
