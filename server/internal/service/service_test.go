package service

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/convergehq/converge/server/internal/testkit"
)

// logger logs everything to a buffer the test reads while the services'
// goroutines write to it.
func logger() (*slog.Logger, *testkit.Buffer) {
	var buf testkit.Buffer
	return slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), &buf
}

// probe records when it started and the order services returned in.
type probe struct {
	name    string
	started chan struct{}
	linger  time.Duration
	// exit, if set, makes Run return on its own when closed.
	exit  chan struct{}
	order *[]string
	mu    *sync.Mutex
}

func newProbe(name string, order *[]string, mu *sync.Mutex) *probe {
	return &probe{name: name, started: make(chan struct{}), order: order, mu: mu}
}

func (p *probe) Name() string { return p.name }

func (p *probe) Run(ctx context.Context) {
	close(p.started)
	select {
	case <-ctx.Done():
	case <-p.exit:
		return
	}
	time.Sleep(p.linger) // cleanup that takes a while
	p.mu.Lock()
	*p.order = append(*p.order, p.name)
	p.mu.Unlock()
}

func waitStarted(t *testing.T, ps ...*probe) {
	t.Helper()
	for _, p := range ps {
		testkit.ReceiveWithin(t, 5*time.Second, p.started, p.name+" to start")
	}
}

// TestStopIsReverseAndWaitsForEach: services stop last-started first, and
// a service is asked to stop only once the one after it has returned, even
// when that one takes a while to clean up.
func TestStopIsReverseAndWaitsForEach(t *testing.T) {
	log, buf := logger()
	var order []string
	var mu sync.Mutex
	bus, registry, broker := newProbe("bus", &order, &mu), newProbe("registry", &order, &mu), newProbe("broker", &order, &mu)
	broker.linger = 50 * time.Millisecond
	g := Start(context.Background(), log, bus, registry, broker)
	waitStarted(t, bus, registry, broker)
	g.Stop()
	if got := strings.Join(order, ","); got != "broker,registry,bus" {
		t.Fatalf("stop order = %s, want broker,registry,bus", got)
	}
	for _, name := range []string{"bus", "registry", "broker"} {
		if !strings.Contains(buf.String(), `msg="stopping service" service=`+name) {
			t.Errorf("no stopping line for %s in the log:\n%s", name, buf)
		}
	}
	g.Stop() // a second Stop finds everything stopped
	if len(order) != 3 {
		t.Fatalf("a second Stop ran services again: %v", order)
	}
}

// TestSlowStopIsReported: while a service takes longer than slowStop to
// return, the group says so, and still waits for it.
func TestSlowStopIsReported(t *testing.T) {
	log, buf := logger()
	var order []string
	var mu sync.Mutex
	slow := newProbe("slow", &order, &mu)
	slow.linger = 300 * time.Millisecond
	g := Start(context.Background(), log, slow)
	g.slowStop = 50 * time.Millisecond
	waitStarted(t, slow)
	g.Stop()
	if len(order) != 1 {
		t.Fatal("Stop returned before the slow service did")
	}
	if !strings.Contains(buf.String(), `msg="service is still stopping" service=slow`) {
		t.Fatalf("no still-stopping line in the log:\n%s", buf)
	}
}

// TestParentContextStopsAll: ending the context given to Start stops every
// service without Stop.
func TestParentContextStopsAll(t *testing.T) {
	log, _ := logger()
	var order []string
	var mu sync.Mutex
	a, b := newProbe("a", &order, &mu), newProbe("b", &order, &mu)
	ctx, cancel := context.WithCancel(context.Background())
	g := Start(ctx, log, a, b)
	waitStarted(t, a, b)
	cancel()
	for _, r := range g.running {
		testkit.ReceiveWithin(t, 5*time.Second, r.done, r.svc.Name()+" to return once its context ended")
	}
}

// TestEarlyReturnIsAnError: a service that returns while it should still
// run is logged as an error, naming it.
func TestEarlyReturnIsAnError(t *testing.T) {
	log, buf := logger()
	var order []string
	var mu sync.Mutex
	quitter := newProbe("quitter", &order, &mu)
	quitter.exit = make(chan struct{})
	g := Start(context.Background(), log, quitter)
	waitStarted(t, quitter)
	close(quitter.exit)
	<-g.running[0].done
	if !strings.Contains(buf.String(), `level=ERROR msg="service stopped before it was asked to" service=quitter`) {
		t.Fatalf("no error line for the early return:\n%s", buf)
	}
	g.Stop()
}
