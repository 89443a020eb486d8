package conctl_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

func sampleResource() *convergev1.Resource {
	spec, _ := structpb.NewStruct(map[string]any{"greeting": "Hello", "replicas": 3})
	return &convergev1.Resource{
		Namespace: "default", Kind: "greeting", KindVersion: 1, Name: "hello-world", Uid: "uid-1",
		Labels: map[string]string{"team": "web", "tier": "frontend"},
		Spec:   spec, Phase: "Failed", Generation: 3, SyncedGeneration: 2, Reconciles: 4,
		Failure: &convergev1.Failure{Message: "quota exceeded", Attempts: 3, Terminal: true, Generation: 3},
		Conditions: []*convergev1.Condition{
			{Type: "Ready", Status: "False", Reason: "HandlerFailed", Message: "quota exceeded", LastTransitionTime: timestamppb.New(testNow.Add(-5 * time.Minute))},
		},
		CreatedAt: timestamppb.New(testNow.Add(-3 * time.Hour)),
		UpdatedAt: timestamppb.New(testNow.Add(-5 * time.Minute)),
	}
}

func TestGetResourceTable(t *testing.T) {
	f, url := newFake(t)
	f.add(sampleResource())
	r := run(testContext(t), url, "", "get", "resource", "greeting/hello-world")
	want := "" +
		"NAMESPACE   KIND       NAME          VERSION   PHASE    GEN   SYNCED   AGE   MESSAGE\n" +
		"default     greeting   hello-world   v1        Failed   3     2        3h    quota exceeded\n"
	if r.code != 0 || r.stdout != want {
		t.Fatalf("exit %d, stdout:\n%s\nwant:\n%s\nstderr: %s", r.code, r.stdout, want, r.stderr)
	}
}

func TestGetResourceLeadsTheMessageWithTheFailureReason(t *testing.T) {
	f, url := newFake(t)
	res := sampleResource()
	res.Failure.Reason = "QuotaExceeded"
	f.add(res)
	r := run(testContext(t), url, "", "get", "resource", "greeting/hello-world")
	want := "" +
		"NAMESPACE   KIND       NAME          VERSION   PHASE    GEN   SYNCED   AGE   MESSAGE\n" +
		"default     greeting   hello-world   v1        Failed   3     2        3h    QuotaExceeded: quota exceeded\n"
	if r.code != 0 || r.stdout != want {
		t.Fatalf("exit %d, stdout:\n%s\nwant:\n%s\nstderr: %s", r.code, r.stdout, want, r.stderr)
	}
}

func TestGetResourceJSONAlwaysHasPhase(t *testing.T) {
	f, url := newFake(t)
	f.add(sampleResource())
	f.add(&convergev1.Resource{Namespace: "default", Kind: "greeting", Name: "fresh"})
	ctx := testContext(t)

	r := run(ctx, url, "", "get", "res", "greeting/hello-world", "-o", "json")
	var got map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, r.stdout)
	}
	if got["phase"] != "Failed" || got["kind_version"] != float64(1) || got["synced_generation"] != "2" {
		t.Fatalf("JSON = %v, want proto field names and the phase", got)
	}
	if _, ok := got["status"]; ok {
		t.Error("unset fields must be left out")
	}

	r = run(ctx, url, "", "get", "resource", "greeting/fresh", "-o", "json")
	got = nil
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatal(err)
	}
	if phase, ok := got["phase"]; !ok || phase != "" {
		t.Fatalf("JSON = %s, want an empty phase present", r.stdout)
	}
}

func TestGetResourceYAML(t *testing.T) {
	f, url := newFake(t)
	f.add(sampleResource())
	r := run(testContext(t), url, "", "get", "resource", "greeting/hello-world", "-o", "yaml")
	for _, want := range []string{"namespace: default\n", "kind_version: 1\n", "phase: Failed\n", "  greeting: Hello\n", "generation: \"3\"\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("YAML lacks %q:\n%s", want, r.stdout)
		}
	}
	if !strings.HasPrefix(r.stdout, "namespace: default\nkind: greeting\n") {
		t.Errorf("YAML does not keep the proto field order:\n%s", r.stdout)
	}
}

func TestGetKindEveryVersionOrOne(t *testing.T) {
	f, url := newFake(t)
	created := timestamppb.New(testNow.Add(-48 * time.Hour))
	f.kinds["greeting/1"] = &convergev1.KindManifest{Kind: "greeting", KindVersion: 1, Owner: "team-web", CreatedAt: created,
		Reactions: []*convergev1.Reaction{{Name: "greet"}, {Name: "rollup"}}, Policy: &convergev1.KindPolicy{Retired: true}}
	f.kinds["greeting/2"] = &convergev1.KindManifest{Kind: "greeting", KindVersion: 2, Owner: "team-web", CreatedAt: created, Description: "Says hello.\nLonger text."}
	f.kinds["other/1"] = &convergev1.KindManifest{Kind: "other", KindVersion: 1}
	ctx := testContext(t)

	r := run(ctx, url, "", "get", "kind", "greeting")
	want := "" +
		"KIND       VERSION   OWNER      REACTIONS      RETIRED   AGE   DESCRIPTION\n" +
		"greeting   v1        team-web   greet,rollup   yes       2d    -\n" +
		"greeting   v2        team-web   -              -         2d    Says hello.\n"
	if r.code != 0 || r.stdout != want {
		t.Fatalf("exit %d, stdout:\n%s\nwant:\n%s\nstderr: %s", r.code, r.stdout, want, r.stderr)
	}

	r = run(ctx, url, "", "get", "manifest", "greeting/2", "-o", "json")
	if !strings.Contains(r.stdout, `"kind_version": 2`) || strings.HasPrefix(r.stdout, "[") {
		t.Fatalf("stdout:\n%s\nwant one manifest object", r.stdout)
	}

	r = run(ctx, url, "", "get", "kind", "missing")
	if r.code != 1 || r.stderr != "error: kind \"missing\" not found (list them with: conctl list kinds)\n" {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestGetNotFoundShowsServerMessage(t *testing.T) {
	_, url := newFake(t)
	r := run(testContext(t), url, "", "get", "resource", "greeting/nope", "-n", "team-a")
	want := "error: get resource team-a/greeting/nope: resource team-a/greeting/nope not found\n"
	if r.code != 1 || r.stderr != want {
		t.Fatalf("exit %d, stderr %q, want %q", r.code, r.stderr, want)
	}
}

func TestGetResourceWideAddsOwner(t *testing.T) {
	f, url := newFake(t)
	f.add(routeResource())
	r := run(testContext(t), url, "", "get", "resource", "route/dev-default", "-o", "wide")
	want := "" +
		"NAMESPACE   KIND    NAME          VERSION   PHASE         GEN   SYNCED   AGE   OWNER         MESSAGE\n" +
		"default     route   dev-default   v1        Reconciling   1     0        60m   account/dev   dependency vpc/dev-main is not synced\n"
	if r.code != 0 || r.stdout != want {
		t.Fatalf("exit %d, stdout:\n%s\nwant:\n%s\nstderr: %s", r.code, r.stdout, want, r.stderr)
	}

	// The default table has no OWNER column; the waiting message explains
	// the phase when nothing else does.
	r = run(testContext(t), url, "", "get", "resource", "route/dev-default")
	want = "" +
		"NAMESPACE   KIND    NAME          VERSION   PHASE         GEN   SYNCED   AGE   MESSAGE\n" +
		"default     route   dev-default   v1        Reconciling   1     0        60m   dependency vpc/dev-main is not synced\n"
	if r.code != 0 || r.stdout != want {
		t.Fatalf("exit %d, stdout:\n%s\nwant:\n%s\nstderr: %s", r.code, r.stdout, want, r.stderr)
	}
}
