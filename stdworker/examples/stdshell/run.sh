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
. "$here/../demo.sh"

set -x
"$bin/stdworker" kinds apply
{ set +x; } 2>/dev/null
demo_stdworker "$here"

set -x
conctl apply -f "$here/resources.yaml" --wait --timeout 60s
conctl get resource std.shell/disk-report -o yaml
conctl get resource std.shell/bash-args -o yaml
conctl get resource std.shell/python-sum -o yaml

# A missing interpreter is a terminal failure that names it.
conctl apply -f - --wait --timeout 60s <<'YAML' || true
type: resource
kind: std.shell
kind_version: 1
name: no-interpreter
spec: {interpreter: /opt/nowhere/zsh, script: "echo hi"}
YAML
conctl describe resource std.shell/no-interpreter
{ set +x; } 2>/dev/null

demo_end
