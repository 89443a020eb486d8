#!/usr/bin/env bash
# Measures conctl plan against a running server: a composite with N
# children (default 1000, each depending on the one before), composed by a
# Starlark bundle (scripts/bench-plan/main.star) that stdworker serves, so
# each plan sends the composer a preview task through the plan API
# (PlanChange). It prints the wall time of RUNS plans (default 7) of an
# unchanged spec and of a spec change that updates every child, with the
# median, min and max.
#
#   scripts/bench-plan.sh [N] [RUNS]
#
# It builds converge, conctl and stdworker, starts `converge dev` on a free
# port with a throwaway PostgreSQL, and stops everything at the end.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
n=${1:-1000}
runs=${2:-7}
here=$root/scripts/bench-plan
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo 7171)
export LISTEN=127.0.0.1:$port
. "$root/stdworker/examples/demo.sh"

conctl apply -f "$here/kinds.yaml" >/dev/null
demo_stdworker "$here" --config "$here/stdworker.yaml"
doc() { printf '{"type": "resource", "kind": "bench.composite", "kind_version": 1, "name": "big", "spec": {"children": %d, "tag": "%s"}}\n' "$n" "$1"; }
doc a | conctl apply -f - >/dev/null
echo "waiting for $n children..."
for _ in $(seq 1 600); do
	have=$(conctl get resource bench.composite/big -o json 2>/dev/null |
		python3 -c 'import json,sys; print(json.load(sys.stdin).get("rollup", {}).get("total", 0))' 2>/dev/null || echo 0)
	[[ "$have" -ge "$n" ]] && break
	sleep 0.5
done
[[ "$have" -ge "$n" ]] || { echo "only $have of $n children appeared" >&2; exit 1; }

measure() { # label tag
	local times=()
	for _ in $(seq 1 "$runs"); do
		local t0 t1
		t0=$(date +%s%N)
		doc "$2" | conctl plan -f - >"$work/plan.out"
		t1=$(date +%s%N)
		times+=($(( (t1 - t0) / 1000000 )))
	done
	local summary
	summary=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {printf "median %d ms, min %d ms, max %d ms", a[int((NR+1)/2)], a[1], a[NR]}')
	printf '%-34s %s (runs: %s)\n' "$1" "$summary" "${times[*]}"
	grep '^Plan:' "$work/plan.out"
}
echo "conctl plan of a 1 -> $n composite, $runs runs each:"
measure "unchanged spec" a
measure "spec change updating every child" b
