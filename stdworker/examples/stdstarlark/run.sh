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
. "$here/../demo.sh"

set -x
"$bin/stdworker" kinds apply
conctl apply -f "$here/kinds.yaml"
{ set +x; } 2>/dev/null
demo_stdworker "$here" --config "$here/stdworker.yaml"

set -x
conctl apply -f "$here/resources.yaml" --wait --timeout 2m
conctl tree example.pipeline/hello
conctl get resource std.shell/hello-stage-2 -o yaml

# An endless loop stops at the step limit: Failed, naming spin.star's line.
conctl apply -f "$here/spinner.yaml" --wait --timeout 2m || true
conctl describe resource example.spinner/forever
{ set +x; } 2>/dev/null

demo_end
