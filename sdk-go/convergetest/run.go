package convergetest

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/convergehq/converge/sdk-go/converge"
)

// Run runs h on task as a worker does and returns what the worker would
// report: [converge.RunHandler] with t's context. A panic is logged to t
// with its stack and returned as the worker reports it. h runs on the
// calling goroutine, so it may call t.Fatal.
func Run(t testing.TB, h converge.HandlerFunc, task *converge.Task) (*converge.Outcome, error) {
	t.Helper()
	out, err := converge.RunHandler(t.Context(), h, task)
	var pe *converge.PanicError
	if errors.As(err, &pe) {
		t.Logf("convergetest: the handler panicked: %v\n%s", pe.Value, pe.Stack)
	}
	return out, err
}

// Logger returns a logger writing to t's output (shown for failed tests
// and with go test -v), for [converge.WithLogger]. What is logged after
// the test has ended is dropped.
func Logger(t testing.TB) *slog.Logger {
	w := &testWriter{out: t.Output()}
	t.Cleanup(w.close)
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct {
	mu     sync.Mutex
	out    io.Writer
	closed bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return len(p), nil
	}
	return w.out.Write(p)
}

func (w *testWriter) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
}

// WorkerOptions are options that suit a worker under test: logging to t
// ([Logger]), reconnecting within milliseconds, and a drain that cancels
// running handlers after a second. Later options override them.
func WorkerOptions(t testing.TB) []converge.Option {
	return []converge.Option{
		converge.WithLogger(Logger(t)),
		converge.WithReconnectBackoff(time.Millisecond, 50*time.Millisecond),
		converge.WithDrainTimeout(time.Second),
	}
}

// NewWorker is [converge.NewWorker] for a worker under test that talks to
// srv: [WorkerOptions], then opts; an invalid option fails the test.
func NewWorker(t testing.TB, srv *Server, opts ...converge.Option) *converge.Worker {
	t.Helper()
	w, err := converge.NewWorker(srv.URL(), append(WorkerOptions(t), opts...)...)
	if err != nil {
		t.Fatalf("converge.NewWorker: %v", err)
	}
	return w
}

// stopWait bounds how long a stop waits for Run to return: the drain
// timeout, then the SDK's few seconds of grace and acknowledgement waits.
const stopWait = time.Minute

// RunWorker runs w in the background until the test ends, then stops it:
// it cancels Run's context, so the worker drains, and fails t if Run
// returned an error or did not return. stop does the same earlier and
// returns Run's error; calling it again returns the same error.
func RunWorker(t testing.TB, w *converge.Worker) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var once sync.Once
	var result error
	halt := func() error {
		once.Do(func() {
			cancel()
			timer := time.NewTimer(stopWait)
			defer timer.Stop()
			select {
			case result = <-done:
			case <-timer.C:
				result = errors.New("convergetest: the worker's Run did not return within " + stopWait.String() + " of being stopped")
			}
		})
		return result
	}
	var stopped atomic.Bool // by the test, which then sees the error
	t.Cleanup(func() {
		if err := halt(); err != nil && !stopped.Load() {
			t.Errorf("convergetest: worker: %v", err)
		}
	})
	return func() error {
		stopped.Store(true)
		return halt()
	}
}
