package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
)

// traceSink is an OTLP/HTTP endpoint that reads and discards what it is
// sent, so tracing can be measured without a collector's own cost on the
// machine. It counts the requests and bytes it received.
type traceSink struct {
	requests, bytes atomic.Int64
	srv             *http.Server
}

// startTraceSink serves the sink on a free local port and points every
// converge the bench starts at it (they inherit the environment),
// sampling ratio of the traces their API calls start.
func startTraceSink(ratio float64) (*traceSink, error) {
	if ratio <= 0 || ratio > 1 {
		return nil, fmt.Errorf("-trace-sample %v: want a ratio in (0, 1]", ratio)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("trace sink: %w", err)
	}
	s := &traceSink{}
	s.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		s.requests.Add(1)
		s.bytes.Add(n)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	})}
	go func() { _ = s.srv.Serve(ln) }()
	for k, v := range map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + ln.Addr().String(),
		"OTEL_TRACES_SAMPLER":         "parentbased_traceidratio",
		"OTEL_TRACES_SAMPLER_ARG":     strconv.FormatFloat(ratio, 'g', -1, 64),
	} {
		if err := os.Setenv(k, v); err != nil {
			return nil, err
		}
	}
	logf("tracing on: %g of traces sampled, exported to a discarding OTLP/HTTP sink at %s", ratio, ln.Addr())
	return s, nil
}

func (s *traceSink) close() {
	_ = s.srv.Close()
	logf("trace sink received %d export requests, %.1f MB", s.requests.Load(), float64(s.bytes.Load())/1e6)
}
