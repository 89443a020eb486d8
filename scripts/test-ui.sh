#!/usr/bin/env bash
# End-to-end test of the web UI in headless Chromium against `converge dev`:
# builds converge, conctl and the landingzone example worker, starts a dev
# server on a free port, seeds it with two landing zones (one Ready, one
# Failed with a culprit, its spec at generation 2), then runs the node:test
# suite in server/internal/ui/e2e with playwright-core. The server runs
# with authorization by bearer token: the test signs in as a reader first
# (actions greyed out), then as an admin. Screenshots go to $UI_ARTIFACTS
# (default /tmp/converge-ui-artifacts).
#
#   scripts/test-ui.sh --update-docs   also copy the screenshots docs/ui.md
#                                      shows (/ui/NAME.png) into docs/public/ui
#
# Chromium: $CHROMIUM, else `chromium` on PATH, else /usr/bin/chromium;
# when none is found and we are root on Debian, it is installed with apt-get.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
artifacts=${UI_ARTIFACTS:-/tmp/converge-ui-artifacts}
update_docs=false
case "${1:-}" in
  "") ;;
  --update-docs) update_docs=true ;;
  *) echo "usage: scripts/test-ui.sh [--update-docs]" >&2; exit 2 ;;
esac

find_chromium() {
  if [ -n "${CHROMIUM:-}" ] && [ -x "$CHROMIUM" ]; then echo "$CHROMIUM"; return; fi
  if command -v chromium >/dev/null 2>&1; then command -v chromium; return; fi
  if [ -x /usr/bin/chromium ]; then echo /usr/bin/chromium; return; fi
  return 1
}
if ! chromium_bin=$(find_chromium); then
  if [ "$(id -u)" = 0 ] && [ -f /etc/debian_version ]; then
    echo "test-ui: installing Debian's chromium package" >&2
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >&2
    chromium_bin=$(find_chromium) || { echo "test-ui: chromium is still missing after apt-get install" >&2; exit 1; }
  else
    echo "test-ui: Chromium not found: set CHROMIUM, or install Debian's 'chromium' package (apt-get install chromium)" >&2
    exit 1
  fi
fi
if [ ! -d node_modules/playwright-core ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi

work=$(mktemp -d)
pids=()
cleanup() {
  # Stop what this script started, newest first; dev removes its database.
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    kill -INT "${pids[$i]}" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "${pids[$i]}" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "${pids[$i]}" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap cleanup EXIT

echo "test-ui: building" >&2
go build -o "$work/converge" ./server/cmd/converge
go build -o "$work/conctl" ./server/cmd/conctl
go build -o "$work/landingzone" ./sdk-go/examples/landingzone

# Authorization on, by bearer token: an admin (the seeding and the
# rollback) and a reader (whose UI must grey out the actions).
printf 'tok-admin spiffe://converge.test/ui/admin\ntok-viewer spiffe://converge.test/ui/viewer\n' >"$work/tokens"
"$work/converge" dev --listen 127.0.0.1:0 --token-file "$work/tokens" \
  --admin-ids spiffe://converge.test/ui/admin --reader-ids spiffe://converge.test/ui/viewer >"$work/dev.log" 2>&1 &
pids+=($!)
url=
for _ in $(seq 1 600); do
  url=$(sed -n 's/^  API: *\(http[^ ]*\).*/\1/p' "$work/dev.log" | head -n1)
  [ -n "$url" ] && break
  kill -0 "${pids[0]}" 2>/dev/null || break
  sleep 0.1
done
if [ -z "$url" ]; then
  echo "test-ui: converge dev did not start; its log:" >&2
  cat "$work/dev.log" >&2
  exit 1
fi
echo "test-ui: converge dev at $url" >&2
export CONVERGE_SERVER=$url CONVERGE_TOKEN=tok-admin

"$work/landingzone" -server "$url" -fail 'vpc:broken-vpc-1:quota exceeded: 5 VPCs per region' >"$work/worker.log" 2>&1 &
pids+=($!)

conctl() { "$work/conctl" "$@"; }
conctl apply -f sdk-go/examples/landingzone/kinds.yaml
conctl apply -f sdk-go/examples/landingzone/zone.yaml --wait --timeout 60s
zone() {
  printf 'type: resource\nkind: landingzone\nkind_version: 1\nname: broken\nspec: {prefix: broken, accounts: 3%s}\n' "$1"
}
# The broken zone fails by design: --wait reports it and exits non-zero.
if zone '' | conctl apply -f - --wait --timeout 60s; then
  echo "test-ui: landingzone/broken became Ready; the worker's -fail did not apply" >&2
  exit 1
fi
if zone ', vpc_cidr: 10.1.0.0/16' | conctl apply -f - --wait --timeout 60s; then
  echo "test-ui: landingzone/broken became Ready at generation 2" >&2
  exit 1
fi

# A kind that moves to v2 in a staged rollout. No worker serves it, so the
# moved resources stay Reconciling and the rollout stays on its first wave
# until the browser test acts on it.
note() {
  printf 'type: manifest\nkind: note\nkind_version: %s\nspec_schema: {type: object, properties: {%s: {type: string}}}\nreactions: [{name: reconcile, trigger: specChange, emits: [status]}]\n%s\n' "$@"
}
note 1 text '' | conctl apply -f -
for i in 1 2 3 4; do
  printf 'type: resource\nkind: note\nkind_version: 1\nname: note-%s\nspec: {text: "note %s"}\n' "$i" "$i" | conctl apply -f -
done
note 2 body 'conversion: {expr: "{\"body\": spec.?text.orValue(\"\")}"}' | conctl apply -f -
conctl rollout start note --to-version 2 --waves 2 --ready-timeout 1h --reason "ui test"

mkdir -p "$artifacts"
echo "test-ui: running the browser tests (screenshots in $artifacts)" >&2
status=0
CONVERGE_UI_URL=$url CHROMIUM=$chromium_bin UI_ARTIFACTS=$artifacts \
  node --test --test-reporter=spec server/internal/ui/e2e/ || status=$?
if [ "$status" != 0 ]; then
  echo "test-ui: failed; the server's log:" >&2
  tail -n 50 "$work/dev.log" >&2
  echo "test-ui: the worker's log:" >&2
  tail -n 20 "$work/worker.log" >&2
fi
if [ "$status" = 0 ] && $update_docs; then
  mkdir -p docs/public/ui
  for name in $(grep -o '(/ui/[A-Za-z0-9_-]*\.png)' docs/ui.md | sed 's|(/ui/\(.*\))|\1|' | sort -u); do
    cp "$artifacts/$name" docs/public/ui/ || { echo "test-ui: docs/ui.md shows $name, which the browser test did not take" >&2; status=1; }
  done
  echo "test-ui: docs/public/ui updated from $artifacts" >&2
fi
exit "$status"
