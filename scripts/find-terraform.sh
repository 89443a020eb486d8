#!/usr/bin/env bash
# find-terraform.sh prints the path of a terraform or tofu binary for
# stdworker's stdterraform tests and demos: TERRAFORM_BINARY if set, else
# terraform or tofu on PATH, else an OpenTofu built from the Go module proxy
# into a cache directory (a few minutes the first time, then reused).
#
# The build runs in a module of its own in a temporary directory: OpenTofu's
# go.mod has a replace directive, so `go install …@version` refuses it, and
# its dependencies must not touch this repository's go.mod.
#
# Environment: TERRAFORM_BINARY (use this), TOFU_VERSION (default below),
# CONVERGE_TOOLS_CACHE (default ${XDG_CACHE_HOME:-$HOME/.cache}/converge).
# Prints the path on stdout; progress and errors go to stderr; exits 1 if no
# binary can be found or built.
set -euo pipefail

TOFU_VERSION="${TOFU_VERSION:-v1.10.6}"
# OpenTofu v1.10.x replaces hashicorp/hcl with its fork; the build module
# must repeat the replace.
HCL_REPLACE='github.com/hashicorp/hcl/v2 v2.20.1 => github.com/opentofu/hcl/v2 v2.20.2-0.20250121132637-504036cd70e7'

say() { echo "find-terraform: $*" >&2; }

if [[ -n "${TERRAFORM_BINARY:-}" ]]; then
	if [[ -x "$TERRAFORM_BINARY" ]] || command -v "$TERRAFORM_BINARY" >/dev/null 2>&1; then
		command -v "$TERRAFORM_BINARY"
		exit 0
	fi
	say "TERRAFORM_BINARY=$TERRAFORM_BINARY is not an executable"
	exit 1
fi

for name in terraform tofu; do
	if path="$(command -v "$name" 2>/dev/null)"; then
		echo "$path"
		exit 0
	fi
done

cache="${CONVERGE_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/converge}/tofu-$TOFU_VERSION"
if [[ -x "$cache/tofu" ]]; then
	echo "$cache/tofu"
	exit 0
fi

if ! command -v go >/dev/null 2>&1; then
	say "no terraform or tofu on PATH, and no go to build OpenTofu $TOFU_VERSION with"
	exit 1
fi

say "no terraform or tofu on PATH; building OpenTofu $TOFU_VERSION from the Go module proxy into $cache (takes minutes once)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$cache"
(
	cd "$work"
	cat >go.mod <<GOMOD
module example.com/converge/tools/tofu

go 1.26

replace $HCL_REPLACE
GOMOD
	go get -tool "github.com/opentofu/opentofu/cmd/tofu@$TOFU_VERSION" >&2
	go build -o "$cache/tofu.tmp" github.com/opentofu/opentofu/cmd/tofu >&2
	mv "$cache/tofu.tmp" "$cache/tofu"
) || {
	say "building OpenTofu $TOFU_VERSION failed (see above)"
	exit 1
}
"$cache/tofu" version >&2 || {
	say "the OpenTofu just built does not run"
	exit 1
}
echo "$cache/tofu"
