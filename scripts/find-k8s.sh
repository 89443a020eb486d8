#!/usr/bin/env bash
# find-k8s.sh finds or builds the three programs deploy/helm's
# TestChartInstallsIntoRealAPIServer (kubeapi_test.go) needs to install the
# chart into a real Kubernetes API server: etcd, kube-apiserver and the helm
# CLI. Nothing runs pods: the test only needs the API server to admit (and
# validate) every object the chart renders, so no kubelet, scheduler or
# controller-manager is built.
#
# It prints one NAME=path line per program, for the test's environment:
#
#   CONVERGE_TEST_ETCD=…/etcd-v3.6.16/etcd
#   CONVERGE_TEST_KUBE_APISERVER=…/kube-apiserver-v1.37.2/kube-apiserver
#   CONVERGE_TEST_HELM=…/helm-v3.22.0/helm
#   CONVERGE_TEST_SERVICEMONITOR_CRD=…/prometheus-operator-v0.85.0/monitoring.coreos.com_servicemonitors.yaml
#
# so a shell can run:  eval "export $(scripts/find-k8s.sh | tr '\n' ' ')"
# (scripts/test.sh does this for the full run). A variable already set to an
# executable is kept. Programs on PATH are deliberately not used: the test is
# written against these versions (helm 3's client-side apply and its lookup
# behaviour, the API server's validation), and a stray kubectl-era binary of
# another version would make failures depend on the machine.
#
# Each program is built from the Go module proxy into the cache the first
# time (10 to 25 minutes on 2 cores, ~6 GB of Go build and module cache, the
# kube-apiserver link peaking at ~2.5 GB of memory), then reused in
# milliseconds:
#   etcd           a three-line module calling etcdmain.Main: etcd's own
#                  go.mod has replace directives, so `go install` refuses it.
#                  If that build fails, Debian's etcd-server package is
#                  unpacked instead (apt-get download + dpkg -x, no install).
#   kube-apiserver k8s.io/kubernetes's go.mod replaces k8s.io/* with
#                  ./staging, which module zips omit: the module's source is
#                  copied, the replaces dropped and each k8s.io/* v0.0.0
#                  requirement pointed at the published v0.<minor>.<patch>.
#   helm           go install helm.sh/helm/v3/cmd/helm.
# The chart's optional ServiceMonitor is a prometheus-operator custom
# resource; its real CustomResourceDefinition (with the operator's OpenAPI
# schema, so the API server validates the chart's ServiceMonitor against it)
# is copied out of the operator's Go module, which the module proxy serves.
# The builds run in parallel; each one's output goes to a log that is
# printed if it fails.
#
# Environment: CONVERGE_TEST_ETCD, CONVERGE_TEST_KUBE_APISERVER,
# CONVERGE_TEST_HELM, CONVERGE_TEST_SERVICEMONITOR_CRD (use these),
# ETCD_VERSION, KUBE_VERSION, HELM_VERSION, PROMETHEUS_OPERATOR_VERSION
# (defaults below), CONVERGE_TOOLS_CACHE (default
# ${XDG_CACHE_HOME:-$HOME/.cache}/converge, shared with find-terraform.sh).
# Progress and errors go to stderr; exits 1, naming what failed, if any
# program can be neither found nor built.
set -euo pipefail

ETCD_VERSION="${ETCD_VERSION:-v3.6.16}"
KUBE_VERSION="${KUBE_VERSION:-v1.37.2}"
HELM_VERSION="${HELM_VERSION:-v3.22.0}"
PROMETHEUS_OPERATOR_VERSION="${PROMETHEUS_OPERATOR_VERSION:-v0.85.0}"

say() { echo "find-k8s: $*" >&2; }

cache_root="${CONVERGE_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/converge}"
etcd_bin="$cache_root/etcd-$ETCD_VERSION/etcd"
apiserver_bin="$cache_root/kube-apiserver-$KUBE_VERSION/kube-apiserver"
helm_bin="$cache_root/helm-$HELM_VERSION/helm"
crd_file="$cache_root/prometheus-operator-$PROMETHEUS_OPERATOR_VERSION/monitoring.coreos.com_servicemonitors.yaml"

# given VAR: if the variable is set, it must name an executable.
given() {
	local v="${!1:-}"
	[[ -z "$v" ]] && return 1
	if [[ -x "$v" ]] || command -v "$v" >/dev/null 2>&1; then
		return 0
	fi
	say "$1=$v is not an executable"
	exit 1
}

build_etcd() {
	local work="$1" out="$2"
	mkdir -p "$work/etcd" && cd "$work/etcd"
	cat >go.mod <<'GOMOD'
module example.com/converge/tools/etcd

go 1.26
GOMOD
	cat >main.go <<'GO'
// Command etcd is etcd's server, built from the Go module proxy: etcd's own
// module has replace directives, so `go install` refuses it.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
	if go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" && go mod tidy &&
		go build -buildvcs=false -trimpath -ldflags "-s -w" -o "$out.tmp" . && "$out.tmp" --version; then
		mv "$out.tmp" "$out"
		return 0
	fi
	echo "building etcd $ETCD_VERSION from the Go module proxy failed; trying Debian's etcd-server package"
	command -v apt-get >/dev/null && command -v dpkg >/dev/null || {
		echo "no apt-get/dpkg for the etcd-server fallback"
		return 1
	}
	mkdir -p "$work/etcd-deb" && cd "$work/etcd-deb"
	# apt-get download needs fresh lists; update only when it fails without.
	apt-get download etcd-server || { [[ "$(id -u)" = 0 ]] && apt-get update -qq && apt-get download etcd-server; }
	dpkg -x etcd-server_*.deb root
	cp root/usr/bin/etcd "$out.tmp"
	"$out.tmp" --version
	mv "$out.tmp" "$out"
}

build_apiserver() {
	local work="$1" out="$2"
	local minor="v0.${KUBE_VERSION#v1.}"
	local json dir
	# On failure go mod download -json still prints its JSON, with the reason in "Error".
	json="$(go mod download -json "k8s.io/kubernetes@$KUBE_VERSION")" || true
	dir="$(sed -n 's/^\t"Dir": "\(.*\)",$/\1/p' <<<"$json")"
	[[ -n "$dir" && -d "$dir" ]] || {
		echo "go mod download k8s.io/kubernetes@$KUBE_VERSION failed:"
		echo "$json"
		return 1
	}
	cp -r "$dir" "$work/kubernetes"
	chmod -R u+w "$work/kubernetes"
	cd "$work/kubernetes"
	rm -rf go.work go.work.sum vendor
	# Drop the replace (...) block (it points k8s.io/* at ./staging) and
	# require the published staging modules instead of v0.0.0.
	awk '/^replace \($/ {skip=1; next} skip && /^\)$/ {skip=0; next} !skip' go.mod >go.mod.new
	sed -E "s#^(\s+k8s\.io/[A-Za-z0-9._/-]+) v0\.0\.0\$#\1 $minor#" go.mod.new >go.mod
	rm go.mod.new
	if grep -qE '^\s*k8s\.io/\S+ v0\.0\.0$|^replace' go.mod; then
		echo "go.mod still has a replace or a k8s.io v0.0.0 requirement after editing:"
		grep -nE '^\s*k8s\.io/\S+ v0\.0\.0$|^replace' go.mod
		return 1
	fi
	go build -mod=mod -buildvcs=false -trimpath \
		-ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION" \
		-o "$out.tmp" ./cmd/kube-apiserver
	"$out.tmp" --version
	mv "$out.tmp" "$out"
}

build_helm() {
	local work="$1" out="$2"
	mkdir -p "$work/helm-bin"
	GOBIN="$work/helm-bin" go install -trimpath -ldflags "-s -w" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
	"$work/helm-bin/helm" version --short
	mv "$work/helm-bin/helm" "$out"
}

# servicemonitor_crd copies the CRD out of the operator's module (a download
# of a few MB, no build): synchronously, it takes seconds.
servicemonitor_crd() {
	if [[ -n "${CONVERGE_TEST_SERVICEMONITOR_CRD:-}" ]]; then
		[[ -s "$CONVERGE_TEST_SERVICEMONITOR_CRD" ]] && return 0
		say "CONVERGE_TEST_SERVICEMONITOR_CRD=$CONVERGE_TEST_SERVICEMONITOR_CRD is not a file"
		exit 1
	fi
	[[ -s "$crd_file" ]] && return 0
	command -v go >/dev/null 2>&1 || {
		say "the ServiceMonitor CRD is not cached and there is no go to download it with; set CONVERGE_TEST_SERVICEMONITOR_CRD"
		exit 1
	}
	local mod="github.com/prometheus-operator/prometheus-operator@$PROMETHEUS_OPERATOR_VERSION" dir
	local json
	json="$(go mod download -json "$mod")" || true
	dir="$(sed -n 's/^\t"Dir": "\(.*\)",$/\1/p' <<<"$json")"
	local src="$dir/example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml"
	if [[ -z "$dir" || ! -s "$src" ]]; then
		say "could not get the ServiceMonitor CRD from $mod: go mod download failed, or the module has no example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml"
		echo "$json" >&2
		exit 1
	fi
	mkdir -p "$(dirname "$crd_file")"
	cp "$src" "$crd_file.tmp"
	chmod 644 "$crd_file.tmp"
	mv "$crd_file.tmp" "$crd_file"
}

work=""
cleanup() { if [[ -n "$work" ]]; then rm -rf "$work"; fi; }
trap cleanup EXIT

declare -A pids logs names
start_build() { # var name binary builder
	local var="$1" name="$2" bin="$3" fn="$4"
	if given "$var" || [[ -x "$bin" ]]; then
		return 0
	fi
	command -v go >/dev/null 2>&1 || {
		say "$name is not built yet and there is no go to build it with; install Go 1.26 or set $var"
		exit 1
	}
	[[ -n "$work" ]] || work="$(mktemp -d)"
	mkdir -p "$(dirname "$bin")"
	logs[$var]="$work/$var.log"
	names[$var]="$name"
	say "building $name into $(dirname "$bin") (minutes, once; log: ${logs[$var]})"
	(set -e; "$fn" "$work" "$bin") >"${logs[$var]}" 2>&1 &
	pids[$var]=$!
}

start_build CONVERGE_TEST_KUBE_APISERVER "kube-apiserver $KUBE_VERSION" "$apiserver_bin" build_apiserver
start_build CONVERGE_TEST_ETCD "etcd $ETCD_VERSION" "$etcd_bin" build_etcd
start_build CONVERGE_TEST_HELM "helm $HELM_VERSION" "$helm_bin" build_helm

servicemonitor_crd

failed=()
for var in "${!pids[@]}"; do
	if ! wait "${pids[$var]}"; then
		say "building ${names[$var]} failed; its log:"
		sed 's/^/    /' "${logs[$var]}" >&2
		failed+=("${names[$var]}")
	else
		say "built ${names[$var]}"
	fi
done
if ((${#failed[@]})); then
	say "could not build: ${failed[*]} (see the logs above); set the CONVERGE_TEST_* variable to a binary you have, or fix the build"
	exit 1
fi

echo "CONVERGE_TEST_ETCD=${CONVERGE_TEST_ETCD:-$etcd_bin}"
echo "CONVERGE_TEST_KUBE_APISERVER=${CONVERGE_TEST_KUBE_APISERVER:-$apiserver_bin}"
echo "CONVERGE_TEST_HELM=${CONVERGE_TEST_HELM:-$helm_bin}"
echo "CONVERGE_TEST_SERVICEMONITOR_CRD=${CONVERGE_TEST_SERVICEMONITOR_CRD:-$crd_file}"
