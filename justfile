# Task runner for humans: `npx rust-just <recipe>` (or install just and run `just <recipe>`).
# CI and the README never need it: every recipe is a plain command.

set shell := ["bash", "-euo", "pipefail", "-c"]

# List the recipes.
default:
    @just --list

# Run Converge locally with a throwaway PostgreSQL.
dev *ARGS:
    go run ./server/cmd/converge dev {{ARGS}}

# Run every test (what CI runs).
test *ARGS:
    scripts/test.sh {{ARGS}}

# Regenerate Go, TypeScript and OpenAPI from the protos.
gen:
    scripts/gen.sh

# Lint the protos.
lint:
    npx buf lint
    go vet ./... ./sdk-go/... ./sdk-go/examples/...

# Build the binaries into ./bin.
build:
    go build -o bin/ ./server/cmd/converge ./server/cmd/conctl ./server/cmd/converge-bench

# Run the benchmark (W1 and the River baseline); see docs/benchmarks.md.
bench *ARGS:
    go run ./server/cmd/converge-bench {{ARGS}}

# Run the example leaf worker against a local server.
worker *ARGS:
    go run ./sdk-go/examples/leaf {{ARGS}}
