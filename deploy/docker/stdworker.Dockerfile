# syntax=docker/dockerfile:1
# The generic worker image (stdworker). Build from the repository root:
#   docker build -f deploy/docker/stdworker.Dockerfile -t converge-stdworker:dev .
# deploy/docker/dockerfile_test.go runs the same go build to prove it compiles.

ARG GO_VERSION=1.26.8

FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
# The SDK is its own module, which go.mod replaces with ./sdk-go: its go.mod
# is needed to download the dependencies. The image builds without go.work.
COPY go.mod go.sum ./
COPY sdk-go/go.mod sdk-go/go.sum ./sdk-go/
RUN go mod download
COPY catalog ./catalog
COPY internal ./internal
COPY sdk-go ./sdk-go
# stdworker checks generated kinds with the server's manifest and
# stability rules (server/kindcheck).
COPY server ./server
COPY stdworker ./stdworker
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/stdworker ./stdworker/cmd/stdworker

# debian-slim, not distroless: std.shell runs scripts with /bin/sh and bash. Terraform is not
# included; std.terraform is skipped (and logged) unless an image built on this one adds it.
FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends bash ca-certificates tzdata \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --gid 65532 stdworker \
 && useradd --uid 65532 --gid 65532 --home-dir /var/lib/stdworker --create-home --shell /usr/sbin/nologin stdworker
COPY --from=build /out/stdworker /usr/local/bin/stdworker
USER 65532:65532
WORKDIR /var/lib/stdworker
ENTRYPOINT ["/usr/local/bin/stdworker"]
