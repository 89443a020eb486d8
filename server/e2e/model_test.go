//go:build unix

// The model-based test of the whole engine: TestModel draws random
// sequences of operator, worker and fault actions with pgregory.net/rapid,
// runs them against real PostgreSQL, the real `converge serve` and real Go
// SDK workers in this process, and checks after every action and at the
// end that the engine did what a plain model of it predicts. See
// docs/model-test.md for what it checks and how to read a failure.
//
// Run it (CI runs it bounded by time, 3 minutes by default):
//
//	go test -race -run 'TestModel' ./server/e2e -count=1 -v
//
// Longer, e.g. overnight:
//
//	CONVERGE_MODEL_DURATION=2h go test -race -run '^TestModel$' ./server/e2e -count=1 -v -timeout 3h
//
// Replay a failure: every failure prints the exact command, of the form
//
//	go test -race -run '^TestModel$' ./server/e2e -count=1 -v -rapid.seed=SEED -rapid.checks=1
//
// rapid then finds and shrinks the same case again. -rapid.v logs every
// case while it runs; -rapid.shrinktime bounds shrinking (2m here unless
// set); -rapid.nofailfile=false keeps the shrunk case in a file under
// testdata/rapid for later replays with -rapid.failfile.
package e2e

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"pgregory.net/rapid"

	"github.com/convergehq/converge/server/internal/pgtest"
)

// modelSteps caps the actions of one case; rapid's average (-rapid.steps)
// is set below it unless given.
const modelSteps = 30

// defaultModelDuration bounds a TestModel run unless
// CONVERGE_MODEL_DURATION says otherwise.
const defaultModelDuration = 3 * time.Minute

func TestModel(t *testing.T) {
	if testing.Short() {
		t.Skip("the model-based test skipped in -short mode: it runs the server and workers for minutes")
	}
	recordSources()
	budget := modelDuration(t)
	setRapidDefault("rapid.checks", "RAPID_CHECKS", "1")
	setRapidDefault("rapid.steps", "RAPID_STEPS", "20")
	setRapidDefault("rapid.shrinktime", "RAPID_SHRINKTIME", "2m")
	setRapidDefault("rapid.nofailfile", "RAPID_NOFAILFILE", "true")
	seeded := rapidFlagSet("rapid.seed", "RAPID_SEED")
	start := time.Now()
	for batch := 1; ; batch++ {
		if !seeded {
			mustSetFlag("rapid.seed", strconv.FormatUint(rand.Uint64()|1, 10))
		}
		seed := flag.Lookup("rapid.seed").Value.String()
		ok := t.Run("seed="+seed, func(t *testing.T) {
			defer printReplay(t, seed)
			rapid.Check(t, func(rt *rapid.T) { runCase(t, rt) })
		})
		if !ok || seeded || time.Since(start) > budget {
			t.Logf("model: %d batch(es) of -rapid.checks=%s in %s (budget %s); %d applies refused by admission",
				batch, flag.Lookup("rapid.checks").Value, time.Since(start).Round(time.Second), budget, admissionRefusals.Load())
			return
		}
	}
}

// admissionRefusals counts the applies the model's servers refused, so a
// run shows the refusal path was taken.
var admissionRefusals atomic.Int64

// runCase is one rapid case: a fresh database and server, a random
// sequence of actions with the invariants checked after each, then the
// final phase.
func runCase(st *testing.T, rt *rapid.T) {
	// One case in four reads through a hot standby of its own primary.
	var replica *mreplica
	var dbURL string
	var extra []string
	if rapid.IntRange(0, 3).Draw(rt, "read replica") == 0 {
		st.Logf("model: this case reads through a hot standby")
		replica = &mreplica{r: pgtest.NewReplicated(st)}
		dbURL, extra = replica.r.PrimaryURL, replica.args()
	} else {
		dbURL = pgtest.New(st).URL
	}
	pool, err := pgxpool.New(context.Background(), dbURL)
	if err != nil {
		rt.Fatalf("connecting to the case's database: %v", err)
	}
	rt.Cleanup(pool.Close)
	// A small admission bound refuses applies to kinds whose workers lag
	// or are gone; a refused apply must have changed nothing.
	backlog := rapid.SampledFrom([]int{0, 2, 5}).Draw(rt, "max_backlog")
	srv := newModelServer(rt, dbURL, modelTimings, freeAddr(st), backlog, extra...)
	rec := newRecorder(2*modelTimings.lease + 2*time.Second)
	w := &world{db: pool, srv: srv, api: srv.api, rec: rec, fleet: newFleet(srv.url, rec), kinds: map[string]*mkind{}, res: map[string]*mres{},
		unordered: map[string]bool{}, logOut: st.Logf, replica: replica}
	rt.Cleanup(func() {
		w.fleet.stopAll(rt)
		srv.kill(rt)
		if replica != nil {
			// The clusters are the case's; a shrinking run makes many cases.
			_ = replica.r.Standby.Stop()
			_ = replica.r.Primary.Stop()
		}
	})
	rt.Repeat(w.actions())
	w.finish(rt)
}

func printReplay(t *testing.T, seed string) {
	if t.Failed() {
		t.Logf("REPLAY this failure with:\n  go test -race -run '^TestModel$' ./server/e2e -count=1 -v -rapid.seed=%s -rapid.checks=1", seed)
	}
}

// modelDuration is the wall-clock budget: no new batch of cases starts
// after it.
func modelDuration(t *testing.T) time.Duration {
	s := os.Getenv("CONVERGE_MODEL_DURATION")
	if s == "" {
		return defaultModelDuration
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		t.Fatalf("CONVERGE_MODEL_DURATION=%q: want a positive duration such as 3m or 2h", s)
	}
	return d
}

// setRapidDefault gives a rapid flag this test's default unless the
// command line or rapid's environment variable set it.
func setRapidDefault(name, env, value string) {
	if !rapidFlagSet(name, env) {
		mustSetFlag(name, value)
	}
}

func rapidFlagSet(name, env string) bool {
	if _, ok := os.LookupEnv(env); ok {
		return true
	}
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func mustSetFlag(name, value string) {
	if err := flag.Set(name, value); err != nil {
		panic(fmt.Sprintf("set -%s=%s: %v", name, value, err))
	}
}
