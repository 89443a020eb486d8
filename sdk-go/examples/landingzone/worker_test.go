package main

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"github.com/convergehq/converge/sdk-go/converge"
	"github.com/convergehq/converge/sdk-go/convergetest"
)

// manifests reads kinds.yaml for convergetest, checking specs and
// statuses against the kinds' schemas as the server does.
func manifests(t *testing.T) convergetest.Manifests {
	t.Helper()
	return convergetest.ReadManifests(t, "kinds.yaml", convergetest.YAML(yaml.Unmarshal), convergetest.ValidateWith(validateSchema))
}

// validateSchema checks doc against a JSON Schema 2020-12 document,
// asserting formats, as the server does.
func validateSchema(schema, doc json.RawMessage) error {
	s, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource("schema.json", s); err != nil {
		return err
	}
	compiled, err := c.Compile("schema.json")
	if err != nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return err
	}
	return compiled.Validate(inst)
}

// The worker, as main runs it, composes a zone of 1,000 accounts over a
// real stream: 3,000 children and 2,000 edges in parts, every message
// valid (the test server fails the test otherwise); and a VPC whose flow
// has not arrived fails terminally.
func TestWorkerServesTheLandingZone(t *testing.T) {
	kinds := manifests(t)
	srv := convergetest.NewServer(t)
	w, err := converge.NewWorker(srv.URL(), append(convergetest.WorkerOptions(t), converge.WithCapacity(defaultCapacity))...)
	if err != nil {
		t.Fatal(err)
	}
	(&handlers{}).register(w)
	convergetest.RunWorker(t, w)

	if sub := srv.Subscription(t.Context()); len(sub.GetReactions()) != 4 {
		t.Errorf("the worker subscribed to %v; want the 4 reactions", sub.GetReactions())
	}
	big := convergetest.NewTask(t, kinds.Get(t, kindZone, kindVersion), "compose", `{"prefix":"big","accounts":1000}`,
		convergetest.WithName("big"))
	vpc := convergetest.NewTask(t, kinds.Get(t, kindVPC, kindVersion), "reconcile", `{"cidr":"10.0.0.0/16","account_id":""}`,
		convergetest.WithName("big-vpc-0"))
	srv.Send(big, vpc)

	composed := srv.ResultFor(t.Context(), big)
	if composed.Err != nil {
		t.Fatalf("compose failed: %v", composed.Err)
	}
	out := composed.Outcome
	if len(out.Children) != 3000 || len(out.Edges) != 2000 || out.Parts < 2 {
		t.Errorf("the composition holds %d children and %d edges in %d parts; want 3000 and 2000 in several",
			len(out.Children), len(out.Edges), out.Parts)
	}
	if string(out.Status) != `{"accounts":1000}` {
		t.Errorf("compose status = %s", out.Status)
	}
	if err := kinds.Get(t, kindZone, kindVersion).ValidateStatus(out.Status); err != nil {
		t.Error(err)
	}

	failed := srv.ResultFor(t.Context(), vpc)
	if failed.Err == nil || !converge.IsTerminal(failed.Err) || failed.Err.Error() != errNoAccountID.Error() {
		t.Errorf("vpc result = %v; want the terminal %q", failed.Err, errNoAccountID)
	}
}
