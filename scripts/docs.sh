#!/usr/bin/env bash
# Builds the documentation site (VitePress, pinned in docs/package.json)
# into docs/.vitepress/dist.
#
#   scripts/docs.sh           regenerate docs/reference from the code, then build
#   scripts/docs.sh --check   fail if docs/reference is out of date instead of
#                             rewriting it, then build (what CI should run)
#   scripts/docs.sh dev       serve the site with live reload
#
# The build fails on a dead link: a page link (VitePress's own check), a
# link out of docs/ to a repository file that does not exist (the
# repolinks plugin), or a #fragment no heading has (check-anchors.mjs).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
mode=${1:-build}
case "$mode" in
  build|--check|dev) ;;
  *) echo "usage: scripts/docs.sh [--check|dev]" >&2; exit 2 ;;
esac
vitepress=node_modules/.bin/vitepress
if [ ! -x "$vitepress" ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi
if [ "$mode" = dev ]; then
  exec "$vitepress" dev docs
fi
start=$(date +%s)
if [ "$mode" = --check ]; then
  go run ./scripts/docsref -check
else
  go run ./scripts/docsref
fi
gen=$(( $(date +%s) - start ))
"$vitepress" build docs
node docs/.vitepress/check-anchors.mjs
echo "docs: references ${gen}s, site $(( $(date +%s) - start - gen ))s -> docs/.vitepress/dist"
