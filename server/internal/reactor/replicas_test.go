package reactor

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/convergehq/converge/server/internal/notify"
	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/testkit"
)

// Two emitters (two replicas) drain the same feed while a worker runs and
// removes every delivery as it appears: each delivery must be queued
// exactly once. Without the cursor lock, the second emitter would read
// the same changes and queue deliveries already done again.
func TestTwoEmittersQueueEachDeliveryOnce(t *testing.T) {
	e := newEnv(t)
	ems := []*Emitter{e.emitter(), e.emitter()}
	if _, err := ems[0].Drain(e.ctx); err != nil {
		t.Fatal(err)
	}
	e.bind("b", func(b *store.ReactorBinding) { b.Transitions = []string{Created} })

	ctx, cancel := context.WithCancel(e.ctx)
	var wg sync.WaitGroup
	var queuedTotal atomic.Int64
	errs := make(chan error, 3)
	for _, em := range ems {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				n, err := em.Drain(ctx)
				if err != nil && ctx.Err() == nil {
					errs <- err
					return
				}
				queuedTotal.Add(int64(n))
				time.Sleep(time.Millisecond) // pacing, so two cores are not spent spinning
			}
		}()
	}
	var mu sync.Mutex
	done := map[string]int{}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			rows, err := e.st.Pool().Query(ctx, `DELETE FROM tasks WHERE trigger = 'reactor' RETURNING key`)
			if err != nil {
				if ctx.Err() == nil {
					errs <- err
				}
				return
			}
			for rows.Next() {
				var key string
				if err := rows.Scan(&key); err != nil {
					errs <- err
					rows.Close()
					return
				}
				mu.Lock()
				done[key]++
				mu.Unlock()
			}
			rows.Close()
		}
	}()

	const batches, per = 20, 10
	for i := range batches {
		names := make([]string, per)
		for j := range names {
			names[j] = fmt.Sprintf("r%d-%d", i, j)
		}
		e.apply(1, `{}`, `{}`, names...)
	}
	testkit.PollWithin(t, 20*time.Second, fmt.Sprintf("%d deliveries done", batches*per), func() int {
		select {
		case err := <-errs:
			t.Fatal(err)
		default:
		}
		mu.Lock()
		defer mu.Unlock()
		return len(done)
	}, func(n int) bool { return n >= batches*per })
	// Let both emitters pass the end of the feed once more, then stop.
	for _, em := range ems {
		e.settle(em)
	}
	cancel()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if _, err := e.st.Pool().Exec(e.ctx, `DELETE FROM tasks WHERE trigger = 'reactor'`); err != nil {
		t.Fatal(err)
	}
	for key, n := range done {
		if n != 1 {
			t.Errorf("delivery %s queued %d times", key, n)
		}
	}
	if len(done) != batches*per || queuedTotal.Load() != batches*per {
		t.Fatalf("%d distinct deliveries, %d queued; want %d", len(done), queuedTotal.Load(), batches*per)
	}
}

// With no binding the emitter reads no changes at all; a binding applied
// later is picked up once its kinds wake-up arrives.
func TestIdleWithoutBindings(t *testing.T) {
	e := newEnv(t)
	em := e.emitter()
	em.cfg.CountInterval = time.Hour // only the kinds wake-up recounts
	ctx, cancel := context.WithCancel(e.ctx)
	stopped := make(chan struct{})
	go func() { defer close(stopped); em.Run(ctx) }()
	defer func() { cancel(); <-stopped }()

	// Changes arrive and wake the emitter; it has nothing to do.
	testkit.Eventually(t, "the emitter to create its cursor", func() bool {
		_, err := e.st.ReactorCursor(e.ctx)
		return err == nil
	})
	start := em.loops.Load()
	for i := 0; em.loops.Load() < start+5; i++ {
		e.apply(1, `{}`, `{}`, fmt.Sprint("idle", i))
		e.bus.Publish(notify.Changes)
		testkit.Eventually(t, "the emitter to wake", func() bool { return em.loops.Load() > start+int64(i) })
	}
	if n := em.rounds.Load(); n != 0 {
		t.Fatalf("%d emitter rounds without any binding", n)
	}

	e.bind("b", func(b *store.ReactorBinding) { b.Transitions = []string{Created} })
	e.bus.Publish(notify.Kinds)
	e.apply(1, `{}`, `{}`, "seen")
	e.bus.Publish(notify.Changes)
	testkit.Eventually(t, "the delivery", func() bool { return len(e.deliveries()) == 1 })
	e.wantKeys("b/seen/created")
}
