# demo.sh is what every stdworker demo's run.sh shares; a run.sh sets
# `here` (its own directory) and sources it. It builds converge, conctl and
# stdworker (or uses CONVERGE_BIN_DIR), starts `converge dev` on LISTEN
# (default 127.0.0.1:7070) and waits for it, and stops everything it
# started when the script exits. It defines:
#
#   conctl ARGS...              the built conctl
#   demo_stdworker DIR ARGS...  starts stdworker in DIR (logs in $work)
#   demo_end                    with KEEP=1, keeps running until Ctrl-C
#
# and the variables root, bin, work and listen.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
listen=${LISTEN:-127.0.0.1:7070}
export CONVERGE_SERVER=http://$listen
work=$(mktemp -d)
pids=()

demo_cleanup() {
	for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
	for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
	rm -rf "$work"
}
trap demo_cleanup EXIT

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

demo_stdworker() {
	local dir=$1
	shift
	echo "starting stdworker $* in $dir (log: $work/stdworker.log)"
	(cd "$dir" && exec "$bin/stdworker" "$@" --state-dir "$work/state") >"$work/stdworker.log" 2>&1 &
	pids+=($!)
}

demo_end() {
	if [[ "${KEEP:-}" == 1 ]]; then
		echo "running; press Ctrl-C to stop (stdworker log: $work/stdworker.log)"
		wait
	fi
}
