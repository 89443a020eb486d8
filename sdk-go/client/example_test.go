package client_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/convergehq/converge/sdk-go/client"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// Apply a resource, then wait for its reconcile to settle.
func ExampleClient_WaitFor() {
	c := client.New("http://localhost:7070", client.WithHeader("Authorization", "Bearer "+"token"))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	_, err := c.ApplyResource(ctx, &convergev1.ApplyResourceRequest{
		Kind: "greeting", KindVersion: 1, Name: "hello-world",
	})
	if err != nil {
		log.Fatalf("apply: %v", err) // a *connect.Error: code and the server's message
	}
	res, err := c.WaitFor(ctx, "default", "greeting", "hello-world", client.Settled)
	if connect.CodeOf(err) == connect.CodeNotFound {
		log.Fatal("deleted while waiting")
	}
	if err != nil {
		log.Fatal(err)
	}
	if !client.IsReady(res) {
		log.Fatalf("failed: %s", res.GetFailure().GetMessage())
	}
	fmt.Println("ready")
}

// Print every change in a namespace until interrupted; a broken stream is
// resumed where it left off.
func ExampleClient_Follow() {
	c := client.New(client.DefaultBaseURL)
	err := c.Follow(context.Background(), &convergev1.WatchRequest{Namespace: "default"}, func(resp *convergev1.WatchResponse) error {
		if resp.GetHeartbeat() {
			fmt.Println("watching")
			return nil
		}
		for _, ch := range resp.GetChanges() {
			fmt.Println(ch.GetType(), ch.GetKind(), ch.GetName(), ch.GetPhase())
		}
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
}

// Find out why a composite is not Ready: its rollup names the culprit
// descendants, and GetResourceTree shows where they sit.
func ExampleClient_GetResourceTree() {
	c := client.New(client.DefaultBaseURL)
	ctx := context.Background()

	res, err := c.GetResource(ctx, &convergev1.GetResourceRequest{Namespace: "default", Kind: "landingzone", Name: "acme"})
	if err != nil {
		log.Fatal(err)
	}
	for _, culprit := range res.GetResource().GetRollup().GetCulprits() {
		r := culprit.GetResource()
		fmt.Printf("%s/%s is %s: %s\n", r.GetKind(), r.GetName(), culprit.GetPhase(), culprit.GetMessage())
	}

	tree, err := c.GetResourceTree(ctx, &convergev1.GetResourceTreeRequest{
		Namespace: "default", Kind: "landingzone", Name: "acme", Depth: 2, ChildrenPerNode: 50,
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, child := range tree.GetRoot().GetChildren() {
		if child.GetOnCulpritPath() {
			fmt.Println("on the culprit path:", child.GetResource().GetName(), child.GetPhase())
		}
	}
}

// Invoke an operation verb the kind declares and wait for its outcome.
func ExampleClient_WaitForOperation() {
	c := client.New(client.DefaultBaseURL)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	input, err := structpb.NewStruct(map[string]any{"keep": 2})
	if err != nil {
		log.Fatal(err)
	}
	resp, err := c.InvokeOperation(ctx, &convergev1.InvokeOperationRequest{
		Namespace: "default", Kind: "database", Name: "orders",
		Verb: "snapshot", Input: input, Reason: "before the schema migration",
	})
	if err != nil {
		log.Fatal(err) // e.g. InvalidArgument naming the input field its schema refuses
	}
	op, err := c.WaitForOperation(ctx, resp.GetOperation().GetId())
	if err != nil {
		log.Fatal(err)
	}
	if op.GetState() == client.OperationFailed {
		log.Fatalf("snapshot failed: %s", op.GetMessage())
	}
	fmt.Println("snapshot:", op.GetOutput().AsMap()["id"])
}

// Force a reconcile and wait until it has run. Its phase may never change
// (a Ready resource stays Ready), so the wait also polls.
func ExampleWithPollInterval() {
	c := client.New(client.DefaultBaseURL)
	ctx := context.Background()
	resp, err := c.ReconcileResource(ctx, &convergev1.ReconcileResourceRequest{
		Namespace: "default", Kind: "greeting", Name: "hello-world", Reason: "credentials rotated",
	})
	if err != nil {
		log.Fatal(err)
	}
	before := resp.GetResource()
	res, err := c.WaitFor(ctx, "default", "greeting", "hello-world", func(r *convergev1.Resource) bool {
		ran := r.GetReconciles() > before.GetReconciles()
		failedAgain := r.GetPhase() == client.PhaseFailed && r.GetResourceVersion() > before.GetResourceVersion()
		return ran || failedAgain
	}, client.WithPollInterval(2*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.GetPhase())
}
