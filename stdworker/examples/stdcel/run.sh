#!/usr/bin/env bash
# Runs the stdcel example end to end with one command:
#   stdworker/examples/stdcel/run.sh
# It builds converge, conctl and stdworker (or uses CONVERGE_BIN_DIR), starts
# `converge dev` on LISTEN (default 127.0.0.1:7070), applies std.graph and the
# leaf kinds, starts stdworker, applies the webapp graph (which defines and
# serves the kind webapp v1), applies an instance and waits for it to be
# Ready, shows its children and status, then applies a graph with typos and
# shows how it is rejected. Everything is stopped at the end; KEEP=1 keeps
# it running until Ctrl-C. Needs bash and jq.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../demo.sh"

set -x
"$bin/stdworker" kinds apply
conctl apply -f "$here/kinds.yaml"
{ set +x; } 2>/dev/null
demo_stdworker "$here" --config "$here/stdworker.yaml"

set -x
# The graph: checked, then webapp v1 is applied and served.
conctl apply -f "$here/graph.yaml" --wait --timeout 60s
conctl get resource std.graph/webapp -o yaml
conctl get kind webapp/1 -o yaml

# An instance: the database first, then the service with the database's URL.
conctl apply -f "$here/instance.yaml" --wait --timeout 90s
{ set +x; } 2>/dev/null
# The rollup projects the status once the children have settled.
for _ in $(seq 1 150); do
	conctl get resource webapp/shop -o json | jq -e '.status.url' >/dev/null && break
	sleep 0.2
done
set -x
conctl describe resource webapp/shop
conctl get resource demo.service/shop -o yaml

# A graph with typos fails, naming each path and position.
conctl apply -f "$here/typo.yaml" --wait --timeout 60s || true
conctl describe resource std.graph/typo
{ set +x; } 2>/dev/null

demo_end
