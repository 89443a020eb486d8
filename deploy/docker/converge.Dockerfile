# syntax=docker/dockerfile:1
# The converge server image (converge serve / migrate). Build from the repository root:
#   docker build -f deploy/docker/converge.Dockerfile -t converge:dev .
# deploy/docker/dockerfile_test.go runs the same go build to prove it compiles.

ARG GO_VERSION=1.26.8

FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
# The SDK is its own module, which go.mod replaces with ./sdk-go: its go.mod
# is needed to download the dependencies. The image builds without go.work.
COPY go.mod go.sum ./
COPY sdk-go/go.mod sdk-go/go.sum ./sdk-go/
RUN go mod download
COPY internal ./internal
COPY migrations ./migrations
COPY sdk-go ./sdk-go
COPY server ./server
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X main.version=${VERSION}" -o /out/converge ./server/cmd/converge

# Static binary: distroless carries CA certificates and tzdata, no shell, and runs as uid 65532.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/converge /usr/local/bin/converge
USER 65532:65532
EXPOSE 7070 9090
ENTRYPOINT ["/usr/local/bin/converge"]
CMD ["serve"]
