#!/usr/bin/env bash
# The TypeScript SDK's tests (sdk-ts): builds the package, runs the unit
# tests, then the end-to-end tests (npm pack, install into a fresh project,
# run the example workers against `converge dev`), and prints one summary
# line: "N passed, N failed".
#
#   scripts/test-ts.sh           unit and end-to-end tests
#   scripts/test-ts.sh -short    unit tests only
#
# Needs Go (to build the server), Node.js 20 and npm, and the PostgreSQL
# server binaries for `converge dev` (see scripts/test.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
short=false
[ "${1:-}" = "-short" ] && short=true
say() { printf '\n== %s\n' "$*"; }
start=$(date +%s)

if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  say "npm packages"
  npm ci --no-audit --no-fund --loglevel=error
fi

say "build (sdk-ts)"
node sdk-ts/scripts/build.mjs --tests

log=$(mktemp -t converge-test-ts.XXXXXX)
trap 'rm -f "$log"' EXIT
status=0
say "unit tests (sdk-ts)"
node --test --test-reporter=spec sdk-ts/build/test/test/*.test.js 2>&1 | tee -a "$log" || status=1
if [ "$short" = false ]; then
  say "end-to-end tests (sdk-ts)"
  node --test --test-reporter=spec sdk-ts/build/test/e2e/*.test.js 2>&1 | tee -a "$log" || status=1
fi

sum() { grep -E "^ℹ $1 [0-9]+" "$log" | awk '{ n += $3 } END { print n + 0 }'; }
passed=$(sum pass)
failed=$(sum fail)
[ "$failed" -gt 0 ] && status=1
say "summary: $passed passed, $failed failed, $(( $(date +%s) - start ))s"
echo "$passed passed, $failed failed"
exit "$status"
