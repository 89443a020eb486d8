package app_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/sdk-go/gen/converge/v1/convergev1connect"

	"github.com/convergehq/converge/sdk-go/converge"
	"github.com/convergehq/converge/server/internal/pgtest"
	"github.com/convergehq/converge/server/internal/testkit"
)

// runWorker runs w until the test ends; the returned channel is closed
// once Run has returned, and *err is then what it returned.
func runWorker(t *testing.T, w *converge.Worker) (done <-chan struct{}, err *error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan struct{})
	var runErr error
	go func() {
		defer close(ended)
		runErr = w.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-ended
	})
	return ended, &runErr
}

func condition(r *convergev1.Resource, typ string) *convergev1.Condition {
	for _, c := range r.GetConditions() {
		if c.GetType() == typ {
			return c
		}
	}
	return nil
}

// A worker that registers a reaction the applied kind does not declare is
// refused at subscribe: Run returns the server's reason instead of
// retrying for ever with nothing to do.
func TestWorkerRegisteringAnUndeclaredReactionFailsToStart(t *testing.T) {
	base, ctl, _ := server(t)
	applyGreeting(t, ctl)
	w, err := converge.NewWorker(base, converge.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	w.Handle("greeting", 1, "reconcile", func(context.Context, *converge.Task) (*converge.Result, error) { return nil, nil })
	w.Handle("greeting", 1, "reconcle", func(context.Context, *converge.Task) (*converge.Result, error) { return nil, nil })
	done, runErr := runWorker(t, w)
	select {
	case <-done:
		if err := *runErr; err == nil || !strings.Contains(err.Error(), `kind greeting v1 has no reaction "reconcle"; it declares: reconcile`) {
			t.Fatalf("Run = %v; want the refusal naming the reaction and the declared ones", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return for a refused subscription")
	}
}

// A handler's reason code and retry-after reach the resource: the failure
// and its conditions carry the reason, the retry is due when the handler
// asked, and the completion metric counts the failure by reason. A
// terminal failure's reason is its conditions' reason too.
func TestHandlerFailureReasonAndRetryAfter(t *testing.T) {
	a, base := startWithMetrics(t, pgtest.New(t).URL)
	ctl := convergev1connect.NewControlServiceClient(http.DefaultClient, base)
	applyGreeting(t, ctl)
	w, err := converge.NewWorker(base, converge.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	w.Handle("greeting", 1, "reconcile", func(_ context.Context, task *converge.Task) (*converge.Result, error) {
		if task.Name == "quota" {
			return nil, converge.RetryAfter(time.Hour, converge.Reason("QuotaExceeded", errors.New("the project's quota is used up")))
		}
		return nil, converge.Terminal(converge.Reason("InvalidName", errors.New("no such name")))
	})
	runWorker(t, w)
	applyResource(t, ctl, "quota", map[string]any{"name": "q"})
	applyResource(t, ctl, "bad", map[string]any{"name": "b"})

	before := time.Now()
	r := testkit.Poll(t, "quota to record its failure", func() *convergev1.Resource { return getResource(t, ctl, "quota") },
		func(r *convergev1.Resource) bool { return r.GetFailure() != nil })
	f := r.GetFailure()
	if f.GetReason() != "QuotaExceeded" || f.GetTerminal() || f.GetMessage() != "the project's quota is used up" {
		t.Fatalf("failure = %v; want a transient QuotaExceeded", f)
	}
	if d := f.GetRetryAt().AsTime().Sub(before); d < 59*time.Minute || d > 61*time.Minute {
		t.Fatalf("retry at %s from now; the handler asked for 1h (the backoff is 50-200ms)", d)
	}
	for _, typ := range []string{"Ready", "Synced"} {
		if c := condition(r, typ); c.GetReason() != "QuotaExceeded" || !strings.Contains(c.GetMessage(), "quota is used up") {
			t.Errorf("%s condition = %v; want reason QuotaExceeded", typ, c)
		}
	}

	bad := waitPhase(t, ctl, "bad", "Failed")
	if bad.GetFailure().GetReason() != "InvalidName" || !bad.GetFailure().GetTerminal() {
		t.Fatalf("failure = %v; want a terminal InvalidName", bad.GetFailure())
	}
	for _, typ := range []string{"Ready", "Synced"} {
		if c := condition(bad, typ); c.GetReason() != "InvalidName" {
			t.Errorf("%s condition = %v; want reason InvalidName", typ, c)
		}
	}
	testkit.Poll(t, "the failures to be counted by reason", func() map[string]float64 { return scrape(t, a) },
		func(m map[string]float64) bool {
			return m[`converge_tasks_completed_total{kind="greeting",outcome="transient",reason="QuotaExceeded"}`] == 1 &&
				m[`converge_tasks_completed_total{kind="greeting",outcome="terminal",reason="InvalidName"}`] == 1
		})
}
