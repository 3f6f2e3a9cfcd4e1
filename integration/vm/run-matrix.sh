#!/bin/bash
# Runs a static test binary on every kernel of the matrix (run.sh per kernel) and reports
# pass/fail and duration per kernel. Exit status 0 only if every kernel passed.
#
#   integration/vm/run-matrix.sh [TESTBIN [ARGS...]]
#
# Without TESTBIN it builds and runs the harness's own smoke suite (integration/vm/smoke).
# Environment: VM_SERIES (default "6.1 6.12"), VM_PARALLEL=1 to boot the kernels at the
# same time (each VM takes VM_SMP CPUs and VM_MEM MiB), plus everything run.sh reads
# (VM_ARCH, TOOLJAIL, TJHELPER, VM_FILES, VM_ENV, VM_TIMEOUT, ...). Console logs go to
# integration/vm/.cache/logs/LABEL.log (LABEL: the series, arm64-SERIES for VM_ARCH=arm64);
# a failing kernel's log tail is printed.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
prog=integration/vm/run-matrix.sh
series_list=${VM_SERIES:-6.1 6.12}
cache=${VM_CACHE:-$here/.cache}
mkdir -p "$cache/logs"

if [ $# -eq 0 ]; then
	testbin="$cache/smoke-${VM_ARCH:-amd64}.test"
	(cd "$here/smoke" && CGO_ENABLED=0 GOARCH=${VM_ARCH:-amd64} go test -c -o "$testbin" .) || {
		echo "$prog: building the smoke suite failed" >&2
		exit 2
	}
	set -- "$testbin" -test.v
fi
testbin=$1
shift

export VM_QUIET=1
declare -A rc dur
# label: what run.sh names the kernel (the series; arm64-SERIES for VM_ARCH=arm64).
label() { if [ "${VM_ARCH:-amd64}" = amd64 ]; then echo "$1"; else echo "$VM_ARCH-$1"; fi; }
run_one() { # run_one SERIES ARGS...: output to .cache/logs/LABEL.out
	local s=$1 t0 l
	shift
	l=$(label "$s")
	t0=$(date +%s)
	VM_LOG="$cache/logs/$l.log" "$here/run.sh" "$s" "$testbin" "$@" >"$cache/logs/$l.out" 2>&1
	local r=$?
	echo "$r $(($(date +%s) - t0))" >"$cache/logs/$l.status"
	return $r
}

for s in $series_list; do rm -f "$cache/logs/$(label "$s").status"; done
t0=$(date +%s)
if [ "${VM_PARALLEL:-0}" = 1 ]; then
	for s in $series_list; do run_one "$s" "$@" & done
	wait
else
	for s in $series_list; do run_one "$s" "$@"; done
fi

fail=0
for s in $series_list; do
	l=$(label "$s")
	read -r r d <"$cache/logs/$l.status" || { r=2; d=?; }
	rc[$s]=$r dur[$s]=$d
	if [ "$r" != 0 ]; then
		fail=1
		echo "==== kernel $l FAILED (exit $r) ====" >&2
		cat "$cache/logs/$l.out" >&2
	fi
done
echo "$prog: $(basename "$testbin") on kernels: $series_list (total $(($(date +%s) - t0))s)"
for s in $series_list; do
	l=$(label "$s")
	verdict=PASS
	[ "${rc[$s]}" = 0 ] || verdict="FAIL (exit ${rc[$s]})"
	detail=$(grep -a "^integration/vm/run.sh: kernel $l:" "$cache/logs/$l.out" | tail -n1 | sed 's/^integration\/vm\/run.sh: //')
	printf '  %-10s %-16s %4ss  %s\n' "$l" "$verdict" "${dur[$s]}" "$detail"
done
exit $fail
