package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/convergehq/converge/sdk-go/converge"
	"github.com/convergehq/converge/sdk-go/convergetest"
)

// readDocuments returns the YAML documents of a file, as JSON.
func readDocuments(t *testing.T, path string) []json.RawMessage {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []json.RawMessage
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			return docs
		} else if err != nil {
			t.Fatalf("%s: document %d: %v", path, len(docs)+1, err)
		}
		raw, err := json.Marshal(doc)
		if err != nil {
			t.Fatalf("%s: document %d: %v", path, len(docs)+1, err)
		}
		docs = append(docs, raw)
	}
}

func TestKindsDeclareTheServedReactions(t *testing.T) {
	kinds := manifests(t)
	h := &handlers{}
	served := h.reactions()
	if len(kinds) != len(served) {
		t.Errorf("kinds.yaml declares %d kinds; the worker serves %d", len(kinds), len(served))
	}
	wantEmits := map[string][]string{
		kindZone: {"children", "edges", "status"}, kindAccount: {"status"}, kindVPC: {"status"}, kindRoute: {"status"},
	}
	for _, r := range served {
		reactions := kinds.Get(t, r.kind, kindVersion).Proto().GetReactions()
		if len(reactions) != 1 || reactions[0].GetName() != r.name || reactions[0].GetTrigger() != "specChange" {
			t.Errorf("kind %s: reactions %v; want one specChange reaction %q", r.kind, reactions, r.name)
			continue
		}
		if got := reactions[0].GetEmits(); !slices.Equal(got, wantEmits[r.kind]) {
			t.Errorf("kind %s emits %v; want %v", r.kind, got, wantEmits[r.kind])
		}
	}
}

func TestSchemasRefuseWhatTheyShould(t *testing.T) {
	kinds := manifests(t)
	for _, c := range []struct {
		kind, doc string
	}{
		{kindZone, `{"prefix":"-demo","accounts":3}`},
		{kindZone, `{"prefix":"demo","accounts":0}`},
		{kindZone, `{"prefix":"demo","accounts":10001}`},
		{kindZone, `{"prefix":"demo","accounts":3,"vpc_cidr":"10.0.0.0"}`},
		{kindZone, `{"prefix":"demo","accounts":3,"region":"x"}`},
		{kindZone, `{"accounts":3}`},
		{kindAccount, `{"email":"not-an-email","index":0}`},
	} {
		if kinds.Get(t, c.kind, kindVersion).ValidateSpec(json.RawMessage(c.doc)) == nil {
			t.Errorf("the spec_schema of %s accepts %s", c.kind, c.doc)
		}
	}
}

// A simulated engine: apply zone.yaml's landing zone, run its composer,
// then run every child once its dependencies have run, flowing values
// along the edges as the server does. Every handler runs as the worker
// runs it (convergetest.Run), and every spec and status on the way must
// match its kind's schemas.
func TestLandingZoneConvergesInASimulatedEngine(t *testing.T) {
	kinds := manifests(t)
	h := &handlers{}
	served := map[string]converge.HandlerFunc{}
	for _, r := range h.reactions() {
		served[r.kind] = r.handler
	}

	docs := readDocuments(t, "zone.yaml")
	if len(docs) != 1 {
		t.Fatalf("zone.yaml holds %d documents; want 1", len(docs))
	}
	var zone struct {
		Type        string          `json:"type"`
		Kind        string          `json:"kind"`
		KindVersion int             `json:"kind_version"`
		Name        string          `json:"name"`
		Spec        json.RawMessage `json:"spec"`
	}
	if err := json.Unmarshal(docs[0], &zone); err != nil {
		t.Fatal(err)
	}
	if zone.Type != "resource" || zone.Kind != kindZone || zone.KindVersion != kindVersion || zone.Name != "demo" {
		t.Fatalf("zone.yaml holds %s %s v%d %q; want resource landingzone v1 \"demo\"", zone.Type, zone.Kind, zone.KindVersion, zone.Name)
	}

	root := kinds.Get(t, kindZone, kindVersion)
	res, err := convergetest.Run(t, served[kindZone], convergetest.NewTask(t, root, "compose", zone.Spec, convergetest.WithName(zone.Name)))
	if err != nil {
		t.Fatal(err)
	}
	if err := root.ValidateStatus(res.Status); err != nil {
		t.Error(err)
	}
	if len(res.Children) != 9 || len(res.Edges) != 6 {
		t.Fatalf("demo composed %d children and %d edges; want 9 and 6", len(res.Children), len(res.Edges))
	}

	incoming := map[converge.Ref][]converge.Edge{}
	for _, e := range res.Edges {
		incoming[e.Dependent] = append(incoming[e.Dependent], e)
	}
	statuses := map[converge.Ref]map[string]any{}
	// Children run in the order emitted, which puts every dependency first.
	for _, c := range res.Children {
		m := kinds.Get(t, c.Kind, c.KindVersion)
		if err := m.ValidateSpec(c.Spec.(json.RawMessage)); err != nil {
			t.Errorf("composed spec of %s: %v", c.Name, err)
		}
		spec := asObject(t, c.Spec)
		for _, e := range incoming[c.Ref()] {
			upstream, ok := statuses[e.Dependency]
			if !ok {
				t.Fatalf("child %s runs before its dependency %s", c.Name, e.Dependency.Name)
			}
			for _, f := range e.Flows {
				spec[strings.TrimPrefix(f.To, "/")] = upstream[strings.TrimPrefix(f.From, "/")]
			}
		}
		// NewTask checks the flowed spec against the kind's spec_schema.
		out, err := convergetest.Run(t, served[c.Kind], convergetest.NewTask(t, m, "reconcile", spec, convergetest.WithName(c.Name)))
		if err != nil {
			t.Fatalf("child %s: %v", c.Name, err)
		}
		if err := m.ValidateStatus(out.Status); err != nil {
			t.Errorf("status of %s: %v", c.Name, err)
		}
		statuses[c.Ref()] = asObject(t, out.Status)
	}

	for i := range 3 {
		acct := statuses[converge.RefTo(kindAccount, accountName("demo", i))]
		vpc := statuses[converge.RefTo(kindVPC, vpcName("demo", i))]
		route := statuses[converge.RefTo(kindRoute, routeName("demo", i))]
		if vpc["account_id"] != acct["account_id"] || vpc["vpc_id"] == "" || route["route_id"] == "" {
			t.Errorf("account %d: account %v, vpc %v, route %v; want the account's id in the VPC", i, acct, vpc, route)
		}
	}
}

// asObject round-trips v through JSON into a map.
func asObject(t *testing.T, v any) map[string]any {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}
