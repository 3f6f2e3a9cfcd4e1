#!/usr/bin/env bash
# `make bench`: tooljail against bubblewrap with the same mounts and a bare
# fork+exec, on this machine, in one run; writes BENCHMARKS.md and
# bench/startup-layers.svg. The Makefile builds bin/tooljail first.
#
# Counts (environment): BENCH_STARTUP_RUNS (200), BENCH_LAYER_RUNS (100),
# BENCH_TPUT_RUNS (300), BENCH_LOOP_CALLS (1000000), BENCH_LOOP_REPS (21,
# getppid loops per seccomp variant), BENCH_FSTAT_REPS (9, 0 skips),
# BENCH_RSS_REPS (5), BENCH_UNPRIV_RUNS (100, 0 skips), BENCH_LEAK_RUNS
# (10000, 0 skips), BENCH_DENIED_CALLS (5000 denied calls per run),
# BENCH_DENIED_RUNS (11, 0 skips), BENCH_SERVE_RUNS (2000 calls per variant
# from Python through `tooljail serve`, the CLI, bwrap and bare, for latency
# and again for throughput; 0 skips the section), BENCH_SERVE_LEAK_RUNS
# (10000 served runs of the server's leak check, 0 skips), BENCH_SERVE_BIG_RUNS
# (10 calls per way of 16 MiB of output in the served section, 0 skips),
# BENCH_NET_RUNS (15
# downloads of 100 MiB, and runs of small requests, per way of the network
# section: through the allow mode's proxy and with --net host; 0 skips it),
# BENCH_NET_REQUESTS (50 small requests per run), BENCH_CHANGES_RUNS (200
# start-ups per --changes mode, off/review/record; 0 skips the change-set
# section), BENCH_CHANGES_APPLIES (20 applies of 100 changed files per
# workdir size, 10,000 and 100,000 files). BENCH_QUICK=1 makes
# every unset count small (a minute).
# Extra arguments go to bench/tjbench (see bench/tjbench -help); `-only serve`
# measures only the served section and rewrites only that section of
# BENCHMARKS.md, e.g. BENCH_SERVE_RUNS=200 ./bench/run.sh -only serve; `-only
# net` and `-only changes` do the same for the network and change-set
# sections. At its end tjbench prints a one-screen summary of issue 32's
# targets (met / not met / not measured), the table of the report's "Issue
# 32 targets" section; `bench/.work/tjbench -summary` prints it again from
# the saved raw files.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS

if [ "$(id -u)" -ne 0 ]; then
  echo "bench: run as root (the uid 65534 pass and the default profile's cgroup caps need it): sudo make bench" >&2
  exit 1
fi
if ! command -v bwrap >/dev/null; then
  echo "bench: installing bubblewrap"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq bubblewrap >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null; }
fi
[ -x bin/tooljail ] || { echo "bench: bin/tooljail is missing; run: make bench" >&2; exit 1; }

if [ "${BENCH_QUICK:-0}" = 1 ]; then
  : "${BENCH_STARTUP_RUNS:=30}" "${BENCH_LAYER_RUNS:=15}" "${BENCH_TPUT_RUNS:=60}" "${BENCH_LOOP_CALLS:=500000}"
  : "${BENCH_LOOP_REPS:=5}" "${BENCH_FSTAT_REPS:=2}" "${BENCH_RSS_REPS:=3}" "${BENCH_UNPRIV_RUNS:=20}" "${BENCH_LEAK_RUNS:=200}"
  : "${BENCH_DENIED_RUNS:=3}" "${BENCH_SERVE_RUNS:=100}" "${BENCH_SERVE_LEAK_RUNS:=200}" "${BENCH_SERVE_BIG_RUNS:=3}" "${BENCH_NET_RUNS:=3}" "${BENCH_NET_REQUESTS:=10}"
  : "${BENCH_CHANGES_RUNS:=30}" "${BENCH_CHANGES_APPLIES:=5}"
  export BENCH_NET_RUNS BENCH_NET_REQUESTS BENCH_CHANGES_RUNS BENCH_CHANGES_APPLIES
  export BENCH_STARTUP_RUNS BENCH_LAYER_RUNS BENCH_TPUT_RUNS BENCH_LOOP_CALLS BENCH_LOOP_REPS BENCH_FSTAT_REPS BENCH_RSS_REPS BENCH_UNPRIV_RUNS BENCH_LEAK_RUNS BENCH_DENIED_RUNS
  export BENCH_SERVE_RUNS BENCH_SERVE_LEAK_RUNS BENCH_SERVE_BIG_RUNS
fi

GO=${GO:-go}
work=bench/.work
mkdir -p "$work"
# The driver uses the jail package, so it is built like bin/tooljail
# (cgo with libseccomp, static, same tags); the loop payload is pure Go.
version=$(git describe --always --dirty 2>/dev/null || echo dev)
CGO_ENABLED=1 "$GO" build -tags osusergo,netgo -trimpath \
  -ldflags "-X github.com/tooljail/tooljail/jail.Version=$version -linkmode external -extldflags -static" \
  -o "$work/tjbench" ./bench/tjbench
CGO_ENABLED=0 "$GO" build -trimpath -o "$work/tjloop" ./bench/tjloop
CGO_ENABLED=0 "$GO" build -trimpath -o "$work/hello" ./bench/hello

"$work/tjbench" -tooljail bin/tooljail -loop "$work/tjloop" -hello "$work/hello" -work "$work" \
  -out BENCHMARKS.md -svg bench/startup-layers.svg "$@"
echo "bench: done in $((SECONDS - start)) s (builds included)"
