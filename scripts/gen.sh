#!/usr/bin/env bash
# Regenerates everything generated from the proto files: Go and TypeScript
# code, and the OpenAPI document the server serves.
#
#   scripts/gen.sh          regenerate in place
#   scripts/gen.sh DIR      write the generated files under DIR instead
#                           (the drift test compares DIR with the tree)
#
# Needs the npm packages (npm ci) for buf and protoc-gen-es; the Go plugins
# run through `go tool` from go.mod.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=${1:-$root}
buf=node_modules/.bin/buf
if [ ! -x "$buf" ]; then
  echo "scripts/gen.sh: $buf is missing; run 'npm ci' in $root first" >&2
  exit 1
fi
if [ "$out" = "$root" ]; then
  "$buf" generate
else
  mkdir -p "$out"
  "$buf" generate -o "$out"
fi
# The TypeScript code imports buf/validate from @bufbuild/protovalidate
# (rewrite_imports); include_imports generates a local copy nothing uses.
rm -rf "$out/sdk-ts/gen/buf"
go run ./server/internal/api/openapi/internal/convert \
  "$out/server/internal/api/openapi/gen/converge.swagger.json" \
  "$out/server/internal/api/openapi/openapi.json"
