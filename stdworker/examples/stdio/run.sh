#!/usr/bin/env bash
# Runs the stdio example end to end with one command:
#   stdworker/examples/stdio/run.sh
# It builds converge, conctl and stdworker (or uses CONVERGE_BIN_DIR), starts
# `converge dev` on LISTEN (default 127.0.0.1:7070), applies the two kinds,
# starts stdworker with stdworker.yaml, applies a resource of each kind and
# waits for them, shows their statuses, then shows a terminal failure (exit
# 2). Everything is stopped at the end; KEEP=1 keeps it running until Ctrl-C.
# Needs bash, jq and python3.
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
conctl apply -f "$here/kinds.yaml"
{ set +x; } 2>/dev/null
echo "starting stdworker --config $here/stdworker.yaml"
"$bin/stdworker" --config "$here/stdworker.yaml" --state-dir "$work/state" >"$work/stdworker.log" 2>&1 &
pids+=($!)

set -x
conctl apply -f "$here/resources.yaml" --wait --wait-timeout 60s
conctl get resource example.motd/today -o yaml
conctl get resource example.wordcount/poem -o yaml

# Exit 2 fails the resource terminally, with the program's stderr as message.
conctl apply -f - --wait --wait-timeout 60s <<'YAML' || true
type: resource
kind: example.motd
kind_version: 1
name: refused
spec: {message: "this is forbidden"}
YAML
conctl describe resource example.motd/refused
{ set +x; } 2>/dev/null

if [[ "${KEEP:-}" == 1 ]]; then
	echo "running; press Ctrl-C to stop (stdworker log: $work/stdworker.log)"
	wait
fi
