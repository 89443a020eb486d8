package converge_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"time"

	"github.com/convergehq/converge/sdk-go/converge"
)

// A worker serving one reaction: it reads the spec and reports a status.
func ExampleWorker() {
	w, err := converge.NewWorker("http://localhost:7070",
		converge.WithCapacity(16),
		converge.WithName("greeter"),
		converge.WithLogger(slog.Default()),
	)
	if err != nil {
		slog.Error("bad worker settings", "error", err)
		return
	}
	w.Handle("greeting", 1, "reconcile", func(ctx context.Context, t *converge.Task) (*converge.Result, error) {
		var spec struct {
			Name string `json:"name"`
		}
		if err := t.DecodeSpec(&spec); err != nil {
			return nil, converge.Terminal(err) // a bad spec will not get better by retrying
		}
		return &converge.Result{Status: map[string]any{"message": "hello " + spec.Name}}, nil
	})

	// Cancelling the context (here: on Ctrl-C) drains the worker.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := w.Run(ctx); err != nil {
		slog.Error("worker failed", "error", err)
	}
}

// Conditions and Unhealthy explain a resource that exists but is not well.
func ExampleResult() {
	res := &converge.Result{
		Status:    map[string]any{"endpoint": "db.internal:5432"},
		Unhealthy: true,
		Conditions: []converge.Condition{{
			Type:    "Reachable",
			Status:  converge.ConditionFalse,
			Reason:  "ConnectionRefused",
			Message: "db.internal:5432 refused the connection",
		}},
	}
	fmt.Println(res.Conditions[0].Type, res.Conditions[0].Status)
	// Output: Reachable False
}

func ExampleTerminal() {
	err := fmt.Errorf("reconcile: %w", converge.Terminal(errors.New("region us-mars-1 does not exist")))
	fmt.Println(converge.IsTerminal(err), err)
	fmt.Println(converge.IsTerminal(errors.New("connection reset")))
	// Output:
	// true reconcile: region us-mars-1 does not exist
	// false
}

func ExampleTask_DecodeSpec() {
	t := &converge.Task{Kind: "greeting", Name: "hello", Spec: []byte(`{"name":"world","greeting":"Hi"}`)}
	var spec struct {
		Name     string `json:"name"`
		Greeting string `json:"greeting"`
	}
	if err := t.DecodeSpec(&spec); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s, %s!\n", spec.Greeting, spec.Name)
	// Output: Hi, world!
}

// A composer returns the composite's whole desired set of children, with
// the edges that order them and carry values from one to the next. The
// server creates, updates and prunes children to match.
func ExampleResult_composer() {
	compose := func(ctx context.Context, t *converge.Task) (*converge.Result, error) {
		var spec struct {
			Prefix string `json:"prefix"`
		}
		if err := t.DecodeSpec(&spec); err != nil {
			return nil, converge.Terminal(err)
		}
		account := converge.Child{Kind: "account", KindVersion: 1, Name: spec.Prefix + "-acct",
			Spec: map[string]any{"email": "ops@example.com"}}
		vpc := converge.Child{Kind: "vpc", KindVersion: 1, Name: spec.Prefix + "-vpc",
			Spec: map[string]any{"cidr": "10.0.0.0/16", "account_id": ""}}
		return &converge.Result{
			Compose:  true, // even an empty Children is then the desired set
			Children: []converge.Child{account, vpc},
			Edges: []converge.Edge{
				// The VPC waits for its account, and gets the account's
				// status.account_id in its spec.account_id.
				converge.DependsOn(vpc.Ref(), account.Ref(), converge.FlowFrom("/account_id", "/account_id")),
			},
			Status: map[string]int{"accounts": 1},
		}, nil
	}

	res, err := compose(context.Background(), &converge.Task{Spec: []byte(`{"prefix":"demo"}`)})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, e := range res.Edges {
		fmt.Println(e.Dependent.Name, "waits for", e.Dependency.Name)
	}
	// Output: demo-vpc waits for demo-acct
}

// A childrenSettled reaction computes the composite's own status from the
// rollup of its children.
func ExampleRollup() {
	settled := func(ctx context.Context, t *converge.Task) (*converge.Result, error) {
		r := t.Rollup
		if r == nil {
			return nil, converge.Terminal(errors.New("no rollup: serve this handler for the childrenSettled trigger"))
		}
		status := map[string]any{"ready": fmt.Sprintf("%d/%d", r.Ready, r.Total)}
		if len(r.Culprits) > 0 {
			c := r.Culprits[0]
			status["blocked_by"] = fmt.Sprintf("%s/%s (%s): %s", c.Resource.Kind, c.Resource.Name, c.Phase, c.Message)
		}
		return &converge.Result{Status: status}, nil
	}

	res, _ := settled(context.Background(), &converge.Task{Rollup: &converge.Rollup{
		Total: 3, Ready: 2, Failed: 1,
		Culprits: []converge.Culprit{{
			Resource: converge.RefTo("vpc", "demo-vpc"), Phase: "Failed", Message: "account_id is empty",
		}},
	}})
	fmt.Println(res.Status.(map[string]any)["ready"])
	fmt.Println(res.Status.(map[string]any)["blocked_by"])
	// Output:
	// 2/3
	// vpc/demo-vpc (Failed): account_id is empty
}

// A reaction that needs its kind's provider config: until an operator sets
// the kind version's default config, the worker reports the reaction not
// ready and the server parks its resources instead of failing them.
func ExampleNeedsConfig() {
	w, err := converge.NewWorker("") // $CONVERGE_SERVER, else http://localhost:7070
	if err != nil {
		slog.Error("bad worker settings", "error", err)
		return
	}
	type bucketConfig struct {
		Region string `json:"region"`
	}
	w.Handle("bucket", 1, "reconcile", func(ctx context.Context, t *converge.Task) (*converge.Result, error) {
		// The effective config: the default, with the keys of the
		// resource's named config on top.
		cfg, err := converge.ConfigAs[bucketConfig](t)
		if err != nil {
			return nil, err // transient: fixing the config fixes the retry
		}
		return &converge.Result{Status: map[string]any{"region": cfg.Region}}, nil
	}, converge.NeedsConfig())

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := w.Run(ctx); err != nil {
		slog.Error("worker failed", "error", err)
	}
}

// OnConfig keeps something built from a kind's default provider config (a
// client, here) up to date as operators edit the config, with no restart.
func ExampleWithOnConfig() {
	type storageClient struct{ region string }
	var client atomic.Pointer[storageClient]

	w, err := converge.NewWorker("http://localhost:7070",
		converge.WithOnConfig(func(kind string, version int, config json.RawMessage) {
			var cfg struct {
				Region string `json:"region"`
			}
			if config == nil || json.Unmarshal(config, &cfg) != nil {
				client.Store(nil) // no usable default config (any more)
				return
			}
			client.Store(&storageClient{region: cfg.Region})
		}))
	if err != nil {
		fmt.Println(err)
		return
	}
	w.Handle("bucket", 1, "reconcile", func(ctx context.Context, t *converge.Task) (*converge.Result, error) {
		c := client.Load()
		if c == nil {
			return nil, errors.New("no storage client yet") // transient: retried later
		}
		return &converge.Result{Status: map[string]any{"region": c.region}}, nil
	})

	// The current default config can also be read at any time.
	fmt.Println(w.DefaultConfig("bucket", 1) == nil) // nothing received yet
	// Output: true
}

// A handler that depends on an outside service reports the reaction not
// ready while the service is down, so the server parks the kind's
// resources instead of burning their retries.
func ExampleWorker_SetReady() {
	w, err := converge.NewWorker("http://localhost:7070")
	if err != nil {
		slog.Error("bad worker settings", "error", err)
		return
	}
	w.Handle("dns-record", 1, "reconcile", func(ctx context.Context, t *converge.Task) (*converge.Result, error) {
		return nil, nil // create or update the record
	})
	ping := func(ctx context.Context) error { return nil } // probe the DNS provider's API

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	go func() {
		tick := time.NewTicker(10 * time.Second)
		defer tick.Stop()
		for {
			if err := ping(ctx); err != nil {
				_ = w.SetReady("dns-record", 1, "reconcile", false, "DNS provider unreachable: "+err.Error())
			} else {
				_ = w.SetReady("dns-record", 1, "reconcile", true, "")
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	if err := w.Run(ctx); err != nil {
		slog.Error("worker failed", "error", err)
	}
}

// An operation reaction runs a verb an operator invoked (conctl op) and
// reports its output. Register it like any reaction, e.g.
// w.Handle("db", 1, "backup", backup).
func ExampleOperation() {
	backup := func(ctx context.Context, t *converge.Task) (*converge.Result, error) {
		var in struct {
			Target string `json:"target"`
		}
		if err := t.Operation.DecodeInput(&in); err != nil {
			return nil, converge.Terminal(err)
		}
		// The operation's ID is the same on every attempt: naming the
		// backup by it lets a retry find the backup an earlier attempt
		// took instead of taking another.
		return &converge.Result{Output: map[string]any{"backup": t.Operation.ID, "target": in.Target}}, nil
	}

	res, err := backup(context.Background(), &converge.Task{Trigger: "operation", Operation: &converge.Operation{
		ID: "op-1", Verb: "backup", Input: []byte(`{"target":"s3://backups"}`),
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	out, _ := json.Marshal(res.Output)
	fmt.Println(string(out))
	// Output: {"backup":"op-1","target":"s3://backups"}
}

// A reactor acts on what happened to a watched resource. Delivery is at
// least once, so it keys its side effect by the dedup token: here a page
// is sent once however often the event is delivered. In production, record
// tokens durably, or pass the token as the idempotency key of the API the
// reactor calls.
func ExampleReactorEvent() {
	var mu sync.Mutex
	paged := map[string]bool{}
	page := func(ctx context.Context, t *converge.Task) (*converge.Result, error) {
		mu.Lock()
		defer mu.Unlock()
		if paged[t.DedupToken] {
			return nil, nil // a redelivery of an event already handled
		}
		e := t.Reactor
		fmt.Printf("paging: %s %s went %s (phase %s)\n", e.Watched.Kind, e.Watched.Name, e.Transition, e.WatchedPhase)
		paged[t.DedupToken] = true
		return nil, nil
	}

	event := &converge.Task{Trigger: "reactor", DedupToken: "uid-9/failed/5", Reactor: &converge.ReactorEvent{
		Binding: "page-on-failure", Transition: converge.TransitionFailed,
		Watched: converge.RefTo("db", "orders"), WatchedKindVersion: 1, WatchedGeneration: 5, WatchedPhase: "Failed",
	}}
	for range 2 { // delivered twice
		if _, err := page(context.Background(), event); err != nil {
			fmt.Println(err)
		}
	}
	// Output: paging: db orders went failed (phase Failed)
}

// A typed handler: the spec arrives decoded, the status is a Go type. A
// spec that does not fit greetingSpec fails terminally, naming the field.
func ExampleHandle() {
	type greetingSpec struct {
		Name string `json:"name"`
	}
	type greetingStatus struct {
		Message string `json:"message"`
	}
	w, err := converge.NewWorker("http://localhost:7070")
	if err != nil {
		fmt.Println(err)
		return
	}
	reconcile := func(ctx context.Context, t *converge.TypedTask[greetingSpec]) (*converge.TypedResult[greetingStatus], error) {
		return converge.StatusResult(greetingStatus{Message: "Hello, " + t.Spec.Name}), nil
	}
	converge.Handle(w, "greeting", 1, "reconcile", reconcile)

	// What the worker does with a task, shown without a server:
	h := converge.Typed(reconcile)
	res, _ := h(context.Background(), &converge.Task{Spec: []byte(`{"name":"world"}`)})
	fmt.Println(res.Status.(*greetingStatus).Message)
	_, err = h(context.Background(), &converge.Task{Spec: []byte(`{"name":42}`)})
	fmt.Println(converge.IsTerminal(err), err)
	// Output:
	// Hello, world
	// true converge: decode spec into converge_test.greetingSpec: spec.name: want string, got number
}
