#!/usr/bin/env bash
# find-tf-providers.sh prints the path of a Terraform provider filesystem
# mirror holding the providers stdterraform's generated-kind tests use,
# built from their Go modules (a minute each the first time, then reused),
# so that no test ever downloads a provider:
#
#   <mirror>/registry.terraform.io/<namespace>/<name>/<version>/<os>_<arch>/terraform-provider-<name>_v<version>
#
# Point terraform or tofu at it with a CLI configuration file
# (TF_CLI_CONFIG_FILE) holding
#   provider_installation { filesystem_mirror { path = "<mirror>" } }
#
# Arguments: the provider modules to build, MODULE@VERSION, each named
# github.com/<namespace>/terraform-provider-<name>; default below.
# Environment: TF_PROVIDER_MIRROR (use this directory as it is, build
# nothing), CONVERGE_TOOLS_CACHE (default ${XDG_CACHE_HOME:-$HOME/.cache}/converge).
# Prints the mirror's path on stdout; progress and errors go to stderr;
# exits 1 if a provider can neither be found nor built.
set -euo pipefail

say() { echo "find-tf-providers: $*" >&2; }

if [[ -n "${TF_PROVIDER_MIRROR:-}" ]]; then
	if [[ -d "$TF_PROVIDER_MIRROR" ]]; then
		echo "$TF_PROVIDER_MIRROR"
		exit 0
	fi
	say "TF_PROVIDER_MIRROR=$TF_PROVIDER_MIRROR is not a directory"
	exit 1
fi

modules=("$@")
if [[ ${#modules[@]} -eq 0 ]]; then
	modules=(github.com/hashicorp/terraform-provider-time@v0.14.2)
fi

if ! command -v go >/dev/null 2>&1; then
	say "no go to build the providers with (${modules[*]}); install Go or set TF_PROVIDER_MIRROR to a mirror"
	exit 1
fi

mirror="${CONVERGE_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/converge}/tf-mirror"
platform="$(go env GOOS)_$(go env GOARCH)"

for mod in "${modules[@]}"; do
	path="${mod%@*}"
	version="${mod##*@}"
	if [[ "$path" == "$mod" || ! "$version" =~ ^v[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
		say "$mod: want MODULE@vX.Y.Z"
		exit 1
	fi
	# github.com/<namespace>/terraform-provider-<name> is the registry's
	# hashicorp/<name>; terraform finds it in the mirror under that address.
	if [[ ! "$path" =~ ^github\.com/([a-z0-9-]+)/terraform-provider-([a-z0-9-]+)$ ]]; then
		say "$path: want github.com/<namespace>/terraform-provider-<name>"
		exit 1
	fi
	namespace="${BASH_REMATCH[1]}"
	name="${BASH_REMATCH[2]}"
	dir="$mirror/registry.terraform.io/$namespace/$name/${version#v}/$platform"
	bin="$dir/terraform-provider-${name}_$version"
	if [[ -x "$bin" ]]; then
		continue
	fi
	say "building $mod from the Go module proxy into $dir (about a minute once)"
	work="$(mktemp -d)"
	mkdir -p "$dir"
	start=$(date +%s)
	if ! GOBIN="$work" go install -trimpath -ldflags=-s "$mod" >&2; then
		rm -rf "$work"
		say "building $mod failed (see above); set TF_PROVIDER_MIRROR to a mirror that has it"
		exit 1
	fi
	mv "$work/terraform-provider-$name" "$bin.tmp"
	mv "$bin.tmp" "$bin"
	rm -rf "$work"
	say "built $mod in $(($(date +%s) - start)) s"
done
echo "$mirror"
