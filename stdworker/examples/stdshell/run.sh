#!/usr/bin/env bash
# Runs the std.shell example end to end with one command:
#   stdworker/examples/stdshell/run.sh
# It builds converge, conctl and stdworker (or uses CONVERGE_BIN_DIR), starts
# `converge dev` on LISTEN (default 127.0.0.1:7070), teaches it the std kinds
# (stdworker kinds apply), starts stdworker with no configuration (it serves
# every std kind on the server), applies three std.shell resources, shows
# their statuses, then a script whose interpreter is missing (a terminal
# failure). Everything is stopped at the end; KEEP=1 keeps it running until
# Ctrl-C. Needs bash and python3.
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
stdworker() { "$bin/stdworker" "$@"; }

echo "starting converge dev on $listen (log: $work/converge.log)..."
"$bin/converge" dev --listen "$listen" >"$work/converge.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 300); do
	conctl list kinds >/dev/null 2>&1 && break
	sleep 0.1
done
conctl list kinds >/dev/null 2>&1 || { cat "$work/converge.log"; exit 1; }

set -x
stdworker kinds apply
{ set +x; } 2>/dev/null
echo "starting stdworker (serves every std kind on the server)"
# Not through the function: $! must be stdworker's pid, for the cleanup.
"$bin/stdworker" --state-dir "$work/state" >"$work/stdworker.log" 2>&1 &
pids+=($!)

set -x
conctl apply -f "$here/resources.yaml" --wait --wait-timeout 60s
conctl get resource std.shell/disk-report -o yaml
conctl get resource std.shell/bash-args -o yaml
conctl get resource std.shell/python-sum -o yaml

# A missing interpreter is a terminal failure that names it.
conctl apply -f - --wait --wait-timeout 60s <<'YAML' || true
type: resource
kind: std.shell
kind_version: 1
name: no-interpreter
spec: {interpreter: /opt/nowhere/zsh, script: "echo hi"}
YAML
conctl describe resource std.shell/no-interpreter
{ set +x; } 2>/dev/null

if [[ "${KEEP:-}" == 1 ]]; then
	echo "running; press Ctrl-C to stop (stdworker log: $work/stdworker.log)"
	wait
fi
