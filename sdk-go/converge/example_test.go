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
