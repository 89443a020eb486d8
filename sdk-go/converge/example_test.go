package converge_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"

	"github.com/convergehq/converge/sdk-go/converge"
)

// A worker serving one reaction: it reads the spec and reports a status.
func ExampleWorker() {
	w := converge.NewWorker("http://localhost:7070",
		converge.WithCapacity(16),
		converge.WithName("greeter"),
		converge.WithLogger(slog.Default()),
	)
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
