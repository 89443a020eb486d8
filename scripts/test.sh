#!/usr/bin/env bash
# The test command: everything CI runs, from a clean clone on a fresh machine.
#
#   scripts/test.sh            all tests: the catalog check, buf breaking
#                              against the base branch, Go with -race
#                              (including end-to-end, the docs site build, and
#                              the walkthroughs of README.md and the
#                              getting-started page run as written, by
#                              scripts/docsref's TestRunnableDocs), the TypeScript SDK
#                              (scripts/test-ts.sh), the web UI in headless
#                              Chromium (scripts/test-ui.sh), then every fuzz
#                              target for FUZZTIME (default 5s; scripts/fuzz.sh);
#                              the Helm chart is installed with the helm CLI into
#                              a real kube-apiserver + etcd on loopback (tools
#                              from scripts/find-k8s.sh, built once into a cache)
#   scripts/test.sh -short     skip the slow end-to-end and fault tests, the
#                              real-API-server chart test and fuzzing
#
# It installs what it needs when it can (npm packages; PostgreSQL server
# binaries through apt when run as root on Debian/Ubuntu) and says what
# to install when it cannot.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
say() { printf '\n== %s\n' "$*"; }
die() { printf '\nerror: %s\n' "$*" >&2; exit 1; }

say "toolchain"
command -v go >/dev/null || die "Go is not installed; install Go 1.26 or newer from https://go.dev/dl/"
go version
command -v node >/dev/null && command -v npm >/dev/null || die "Node.js 20 and npm are needed (for buf and the TypeScript SDK); install them from your package manager or https://nodejs.org"
node --version

say "npm packages"
npm ci --no-audit --no-fund --loglevel=error

say "PostgreSQL server binaries"
# converge pg-bin finds them where converge dev and the tests look, and as
# root on Debian/Ubuntu installs them with apt-get first; when it cannot,
# its error names the package to install on each platform.
pgbin=$(go run ./server/cmd/converge pg-bin) || die "the tests need the PostgreSQL server binaries (initdb, postgres); see the error above for what to install, or set CONVERGE_PG_BIN to their directory"
echo "$pgbin"

say "terraform or OpenTofu (for stdworker's stdterraform)"
# A real binary, never a fake: terraform or tofu on PATH, else OpenTofu
# built once from the Go module proxy into a cache (minutes, the first time).
TERRAFORM_BINARY=$(scripts/find-terraform.sh) || die "no terraform or tofu binary, and OpenTofu could not be built (see the messages above); install terraform or tofu, or set TERRAFORM_BINARY"
export TERRAFORM_BINARY
echo "$TERRAFORM_BINARY"

say "Terraform providers (for stdterraform's generated kinds)"
# Real providers built once from their Go modules into a filesystem mirror
# in the same cache (about a minute each the first time), so that no test
# downloads one; the tests read TF_PROVIDER_MIRROR through the script.
TF_PROVIDER_MIRROR=$(scripts/find-tf-providers.sh) || die "the Terraform providers the tests use could not be built (see the messages above); set TF_PROVIDER_MIRROR to a filesystem mirror holding registry.terraform.io/hashicorp/time 0.14.2"
export TF_PROVIDER_MIRROR
echo "$TF_PROVIDER_MIRROR"

if [[ " $* " != *" -short "* ]]; then
  say "etcd, kube-apiserver and helm (for the chart's real-API-server test)"
  # Built once from the Go module proxy into the same cache as OpenTofu
  # (10 to 25 minutes on 2 cores the first time), then found in milliseconds.
  # deploy/helm's TestChartInstallsIntoRealAPIServer reads the variables.
  k8s_env=$(scripts/find-k8s.sh) || die "etcd, kube-apiserver or helm could not be built (see the messages above); set CONVERGE_TEST_ETCD, CONVERGE_TEST_KUBE_APISERVER, CONVERGE_TEST_HELM and CONVERGE_TEST_SERVICEMONITOR_CRD, or run scripts/test.sh -short"
  while IFS='=' read -r name value; do
    export "$name=$value"
    echo "$name=$value"
  done <<<"$k8s_env"
fi

say "jq (for the catalog's stdio programs)"
if ! command -v jq >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "installing jq with apt-get..."
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq jq >/dev/null
fi
command -v jq >/dev/null || die "jq is needed by the catalog's example programs (catalog/*/*/*.sh); install it (Debian/Ubuntu: apt-get install jq; macOS: brew install jq)"
jq --version

# The repository is a Go workspace (go.work): the root module (server,
# stdworker, tools), the SDK's own module in sdk-go/, its examples' and
# the OpenTelemetry adapter's (sdk-go/otelconverge).
# ./... stops at a nested module, so each is named.
gopkgs=(./... ./sdk-go/... ./sdk-go/examples/... ./sdk-go/otelconverge/...)

say "go vet, gofmt, go mod tidy"
go vet "${gopkgs[@]}"
# Each module's go.mod must stand alone (as the SDK's does for its users),
# so tidiness is checked without the workspace.
for mod in . sdk-go sdk-go/examples sdk-go/otelconverge; do
  (cd "$mod" && GOWORK=off go mod tidy -diff >/dev/null) || die "$mod/go.mod or go.sum is not tidy; run: (cd $mod && GOWORK=off go mod tidy)"
done
unformatted=$(gofmt -l server stdworker sdk-go scripts deploy)
[ -z "$unformatted" ] || die "these files are not gofmt-formatted (run gofmt -w on them): $unformatted"

say "conctl catalog check"
# The base is the branch the change goes into: CONVERGE_CATALOG_BASE, else
# origin/main when the clone has it; without one, stability (C6) is skipped
# and the check says so.
catalog_base=${CONVERGE_CATALOG_BASE:-}
if [ -z "$catalog_base" ] && git rev-parse --verify -q origin/main >/dev/null 2>&1; then catalog_base=origin/main; fi
go run ./server/cmd/conctl catalog check catalog ${catalog_base:+--base "$catalog_base"}

say "buf breaking (the converge.v1 protocol)"
# The v1 proto's compatibility promise (docs/upgrades.md), checked against
# the same base: CONVERGE_PROTO_BASE, else the catalog's base.
proto_base=${CONVERGE_PROTO_BASE:-$catalog_base}
if [ -n "$proto_base" ]; then
  # The common git directory, so that a linked worktree (whose .git is a
  # file) is read like a plain clone.
  node_modules/.bin/buf breaking --against "$(git rev-parse --git-common-dir)#ref=$proto_base" || die "proto/ has a breaking change against $proto_base (above); converge.v1 may only grow: add fields and RPCs, never rename, renumber or remove them"
  echo "no breaking change against $proto_base"
else
  echo "note: not checked: no base (set CONVERGE_PROTO_BASE or CONVERGE_CATALOG_BASE to a git ref, or fetch origin/main)"
fi

say "go test -race"
start=$(date +%s)
set +e
go test -race -count=1 -timeout 25m "$@" "${gopkgs[@]}" 2>&1 | tee /tmp/converge-test.log
status=${PIPESTATUS[0]}
set -e
passed=$(grep -c '^ok ' /tmp/converge-test.log || true)
failed=$(grep -cE '^FAIL\s+\S' /tmp/converge-test.log || true)
go_summary="Go: $passed packages passed, $failed failed, $(( $(date +%s) - start ))s"

say "TypeScript SDK"
ts_start=$(date +%s)
set +e
scripts/test-ts.sh "$@"
ts_status=$?
set -e

say "web UI in headless Chromium"
ui_start=$(date +%s)
set +e
scripts/test-ui.sh
ui_status=$?
set -e
ui_secs=$(( $(date +%s) - ui_start ))

fuzz_status=0
fuzz_line="fuzzing: skipped (-short)"
if [[ " $* " != *" -short "* ]]; then
  say "fuzzing (${FUZZTIME:-5s} per target)"
  fuzz_start=$(date +%s)
  set +e
  scripts/fuzz.sh "${FUZZTIME:-5s}"
  fuzz_status=$?
  set -e
  fuzz_line="fuzzing: $([ "$fuzz_status" = 0 ] && echo passed || echo FAILED), $(( $(date +%s) - fuzz_start ))s"
fi

say "summary"
verdict() { [ "$1" = 0 ] && echo passed || echo FAILED; }
echo "$go_summary"
echo "TypeScript SDK: $(verdict "$ts_status"), $(( ui_start - ts_start ))s"
echo "web UI: $(verdict "$ui_status"), ${ui_secs}s (screenshots in ${UI_ARTIFACTS:-/tmp/converge-ui-artifacts})"
echo "$fuzz_line"
for s in "$status" "$ts_status" "$ui_status" "$fuzz_status"; do
  [ "$s" = 0 ] || exit "$s"
done
