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
. "$here/../demo.sh"

set -x
conctl apply -f "$here/kinds.yaml"
{ set +x; } 2>/dev/null
demo_stdworker "$here" --config "$here/stdworker.yaml"

set -x
conctl apply -f "$here/resources.yaml" --wait --timeout 60s
conctl get resource example.motd/today -o yaml
conctl get resource example.wordcount/poem -o yaml

# Exit 2 fails the resource terminally, with the program's stderr as message.
conctl apply -f - --wait --timeout 60s <<'YAML' || true
type: resource
kind: example.motd
kind_version: 1
name: refused
spec: {message: "this is forbidden"}
YAML
conctl describe resource example.motd/refused
{ set +x; } 2>/dev/null

demo_end
