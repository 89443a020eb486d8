#!/usr/bin/env bash
# Runs the stdterraform example end to end with one command:
#   stdworker/examples/stdterraform/run.sh
# It finds terraform or tofu (scripts/find-terraform.sh: PATH, or builds
# OpenTofu once), builds converge, conctl and stdworker (or uses
# CONVERGE_BIN_DIR), starts `converge dev` on LISTEN (default
# 127.0.0.1:7070), applies the std kinds and a provider config naming the
# binary, starts stdworker in this directory, applies a module and waits
# for it to be Ready with its outputs, shows a module with a syntax error
# Failed, then deletes the first and shows its state is empty. Everything
# is stopped at the end; KEEP=1 keeps it running until Ctrl-C. Needs bash
# and jq.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../demo.sh"

tf=$("$root/scripts/find-terraform.sh")
echo "using $tf"

set -x
"$bin/stdworker" kinds apply
conctl apply -f - <<YAML
type: providerconfig
kind: std.terraform
kind_version: 1
name: default
config: {binary: "$tf", backend: {type: local}}
YAML
{ set +x; } 2>/dev/null

demo_stdworker "$here" --kinds std.terraform@1

set -x
conctl apply -f "$here/resources.yaml" --wait --timeout 2m
conctl get resource std.terraform/shop -o yaml
{ set +x; } 2>/dev/null
# status.state says where the state lives: "local <path>" by default.
state=$(conctl get resource std.terraform/shop -o json | jq -r '.status.state | sub("^local "; "")')
echo "resources in $state: $(jq '.resources | length' "$state")"
set -x

# A module that does not parse fails terminally, with terraform's message.
conctl apply -f "$here/broken.yaml" --wait --timeout 2m || true
conctl describe resource std.terraform/broken

# Deleting the resource runs terraform destroy; the state stays, empty.
conctl delete resource std.terraform/shop --wait
{ set +x; } 2>/dev/null
echo "resources left in $state: $(jq '.resources | length' "$state")"

demo_end
