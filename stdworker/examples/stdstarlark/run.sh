#!/usr/bin/env bash
# Runs the stdstarlark example end to end with one command:
#   stdworker/examples/stdstarlark/run.sh
# It builds converge, conctl and stdworker (or uses CONVERGE_BIN_DIR), starts
# `converge dev` on LISTEN (default 127.0.0.1:7070), applies the std kinds
# and the example's kinds, starts stdworker with stdworker.yaml, applies a
# pipeline (a Starlark composer with three std.shell children, each
# receiving the previous one's output) and waits for it to be Ready, then
# shows an endless Starlark loop failing on the step limit. Everything is
# stopped at the end; KEEP=1 keeps it running until Ctrl-C. Needs bash.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../../.." && pwd)
listen=${LISTEN:-127.0.0.1:7070}
export CONVERGE_SERVER=http://$listen
work=$(mktemp -d)
pids=()

cleanup() {
	for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
	for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT

bin=${CONVERGE_BIN_DIR:-}
if [[ -z "$bin" ]]; then
	bin=$work/bin
	echo "building converge, conctl and stdworker..."
	(cd "$root" && go build -o "$bin/" ./server/cmd/converge ./server/cmd/conctl ./stdworker/cmd/stdworker)
fi
conctl() { "$bin/conctl" "$@"; }

echo "starting converge dev on $listen (log: $work/converge.log)..."
"$bin/converge" dev --listen "$listen" --retry-base 200ms --retry-max 2s >"$work/converge.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 300); do
	conctl list kinds >/dev/null 2>&1 && break
	sleep 0.1
done
conctl list kinds >/dev/null 2>&1 || { cat "$work/converge.log"; exit 1; }

set -x
"$bin/stdworker" kinds apply
conctl apply -f "$here/kinds.yaml"
{ set +x; } 2>/dev/null
echo "starting stdworker --config $here/stdworker.yaml (log: $work/stdworker.log)"
"$bin/stdworker" --config "$here/stdworker.yaml" --state-dir "$work/state" >"$work/stdworker.log" 2>&1 &
pids+=($!)

set -x
conctl apply -f "$here/resources.yaml" --wait --wait-timeout 2m
conctl tree example.pipeline/hello
conctl get resource std.shell/hello-stage-2 -o yaml

# An endless loop stops at the step limit: Failed, naming spin.star's line.
conctl apply -f "$here/spinner.yaml" --wait --wait-timeout 2m || true
conctl describe resource example.spinner/forever
{ set +x; } 2>/dev/null

if [[ "${KEEP:-}" == 1 ]]; then
	echo "running; press Ctrl-C to stop (stdworker log: $work/stdworker.log)"
	wait
fi
