package conctl_test

import (
	"encoding/json"
	"strings"
	"testing"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

func TestGraphText(t *testing.T) {
	f, url := newFake(t)
	f.graphs[rkey("default", "landingzone", "acme")] = acmeGraph()

	r := run(testContext(t), url, "", "graph", "landingzone/acme")
	want := `Nodes:
  RESOURCE                         PHASE         MESSAGE
  landingzone/acme                 Failed        -
  account/prod                     Ready         -
  vpc/prod *                       Failed        CIDR "10.0.0.0/16" overlaps a reservation
  route/prod-default               Reconciling   dependency vpc/prod is not synced
  account/dev *                    Reconciling   -
  network/ipam/shared (external)   Ready         -
Edges (dependent -> dependency):
  vpc/prod -> account/prod  [from /account_id -> /account_id]
  vpc/prod -> network/ipam/shared  [from /pools/main -> /ipam_pool]
  route/prod-default -> vpc/prod  [from /vpc_id -> /vpc_id; expr "rt-" + status.vpc_id -> /table_name]  (dependency not synced)
Culprits:
  RESOURCE       PHASE         VIA           MESSAGE
  vpc/prod       Failed        -             CIDR "10.0.0.0/16" overlaps a reservation
  vpc/dev-main   Reconciling   account/dev   creating
* on the path to a culprit
`
	if r.code != 0 || r.stdout != want {
		t.Fatalf("exit %d, stdout:\n%s\nwant:\n%s\nstderr: %s", r.code, r.stdout, want, r.stderr)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if req := f.graphReqs[0]; req.Namespace != "default" || req.Kind != "landingzone" || req.Name != "acme" || req.MaxNodes != 1000 {
		t.Fatalf("request %v, want default/landingzone/acme with max_nodes 1000", req)
	}
}

func TestGraphMaxNodes(t *testing.T) {
	f, url := newFake(t)
	f.graphs[rkey("default", "landingzone", "acme")] = acmeGraph()

	r := run(testContext(t), url, "", "graph", "landingzone/acme", "--max-nodes", "3")
	want := `Nodes:
  RESOURCE                             PHASE    MESSAGE
  landingzone/acme                     Failed   -
  account/prod                         Ready    -
  vpc/prod *                           Failed   CIDR "10.0.0.0/16" overlaps a reservation
  ... and 3 more (raise --max-nodes)
Edges (dependent -> dependency):
  vpc/prod -> account/prod  [from /account_id -> /account_id]
`
	if r.code != 0 || !strings.HasPrefix(r.stdout, want) {
		t.Fatalf("exit %d, stdout:\n%s\nwant it to start with:\n%s\nstderr: %s", r.code, r.stdout, want, r.stderr)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if req := f.graphReqs[0]; req.MaxNodes != 3 {
		t.Fatalf("max_nodes = %d, want 3", req.MaxNodes)
	}
}

func TestGraphWithoutEdgesOrCulprits(t *testing.T) {
	f, url := newFake(t)
	f.graphs[rkey("default", "landingzone", "solo")] = &convergev1.GetResourceGraphResponse{
		Nodes: []*convergev1.GraphNode{{Resource: ref("landingzone", "solo"), Phase: "Ready"}},
	}
	r := run(testContext(t), url, "", "graph", "landingzone/solo")
	want := "" +
		"Nodes:\n" +
		"  RESOURCE           PHASE   MESSAGE\n" +
		"  landingzone/solo   Ready   -\n" +
		"Edges:              <none>\n" +
		"Culprits:           <none>\n"
	if r.code != 0 || r.stdout != want {
		t.Fatalf("exit %d, stdout:\n%s\nwant:\n%s\nstderr: %s", r.code, r.stdout, want, r.stderr)
	}
}

func TestGraphJSONAndYAML(t *testing.T) {
	f, url := newFake(t)
	f.graphs[rkey("default", "landingzone", "acme")] = acmeGraph()
	ctx := testContext(t)

	r := run(ctx, url, "", "graph", "landingzone/acme", "-o", "json")
	var got struct {
		Nodes []struct {
			Resource map[string]string `json:"resource"`
			External bool              `json:"external"`
		} `json:"nodes"`
		Edges []struct {
			Flows []map[string]string `json:"flows"`
		} `json:"edges"`
		Culprits []json.RawMessage `json:"culprits"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, r.stdout)
	}
	if len(got.Nodes) != 6 || !got.Nodes[5].External || got.Nodes[5].Resource["namespace"] != "network" ||
		len(got.Edges) != 3 || got.Edges[2].Flows[1]["expr"] != `"rt-" + status.vpc_id` || len(got.Culprits) != 2 {
		t.Fatalf("JSON:\n%s\nwant the whole graph response", r.stdout)
	}

	r = run(ctx, url, "", "graph", "landingzone/acme", "-o", "yaml")
	if !strings.HasPrefix(r.stdout, "nodes:\n  - resource:\n      namespace: default\n      kind: landingzone\n") ||
		!strings.Contains(r.stdout, "\n  - dependent:\n") || !strings.Contains(r.stdout, "\n    satisfied: true\n") {
		t.Fatalf("YAML:\n%s", r.stdout)
	}
}

func TestGraphDOT(t *testing.T) {
	f, url := newFake(t)
	f.graphs[rkey("default", "landingzone", "acme")] = acmeGraph()

	r := run(testContext(t), url, "", "graph", "landingzone/acme", "-o", "dot")
	want := `digraph "default/landingzone/acme" {
  rankdir=BT;
  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=11];
  edge [fontname="Helvetica", fontsize=9, color="#555555"];
  subgraph cluster_composite {
    label="landingzone/acme\nFailed";
    labelloc=t;
    style=rounded;
    fontname="Helvetica";
    color="#c62828";
    "default/account/prod" [label="account/prod\nReady", style="rounded,filled", fillcolor="#d4edda", color="#2e7d32"];
    "default/vpc/prod" [label="vpc/prod\nFailed", style="rounded,filled", fillcolor="#f8d7da", color="#b71c1c", penwidth=3, tooltip="CIDR \"10.0.0.0/16\" overlaps a reservation"];
    "default/route/prod-default" [label="route/prod-default\nReconciling", style="rounded,filled", fillcolor="#dbe9f6", color="#1565c0", tooltip="dependency vpc/prod is not synced"];
    "default/account/dev" [label="account/dev\nReconciling", style="rounded,filled", fillcolor="#dbe9f6", color="#b71c1c", penwidth=3];
  }
  "network/ipam/shared" [label="network/ipam/shared\nReady\n(external)", style="rounded,filled,dashed", fillcolor="#d4edda", color="#2e7d32"];
  "default/vpc/prod" -> "default/account/prod" [label="from /account_id → /account_id"];
  "default/vpc/prod" -> "network/ipam/shared" [label="from /pools/main → /ipam_pool"];
  "default/route/prod-default" -> "default/vpc/prod" [label="from /vpc_id → /vpc_id\nexpr \"rt-\" + status.vpc_id → /table_name", style=dashed, tooltip="dependency not synced"];
}
`
	if r.code != 0 || r.stdout != want {
		t.Fatalf("exit %d, stdout:\n%s\nwant:\n%s\nstderr: %s", r.code, r.stdout, want, r.stderr)
	}
}

func TestGraphDOTEscapesAndColoursByPhase(t *testing.T) {
	f, url := newFake(t)
	f.graphs[rkey("default", "landingzone", "odd")] = &convergev1.GetResourceGraphResponse{
		Nodes: []*convergev1.GraphNode{
			{Resource: ref("landingzone", "odd"), Phase: "Degraded", Message: "line one\nline \"two\" \\ three\t."},
			{Resource: ref("app", "q"), Phase: "Quarantined"},
			{Resource: ref("app", "o"), Phase: "Orphaned"},
			{Resource: ref("app", "d"), Phase: "Deleting"},
			{Resource: ref("app", "new"), Phase: ""},
		},
		MoreNodes: 7,
	}
	r := run(testContext(t), url, "", "graph", "landingzone/odd", "-o", "dot")
	for _, want := range []string{
		`    label="landingzone/odd\nDegraded\n(7 more not shown)";` + "\n",
		`    color="#b26a00";` + "\n",
		`    tooltip="line one\nline \"two\" \\ three .";` + "\n",
		`"default/app/q" [label="app/q\nQuarantined", style="rounded,filled", fillcolor="#e8daef", color="#6a1b9a"];`,
		`"default/app/o" [label="app/o\nOrphaned", style="rounded,filled", fillcolor="#f1f1f1", color="#9e9e9e"];`,
		`"default/app/d" [label="app/d\nDeleting", style="rounded,filled", fillcolor="#e2e3e5", color="#616161"];`,
		`"default/app/new" [label="app/new", style="rounded,filled", fillcolor="#ffffff", color="#757575"];`,
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("DOT lacks %s\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "penwidth") {
		t.Errorf("no culprits, yet something is drawn as on the culprit path:\n%s", r.stdout)
	}
}

func TestGraphErrors(t *testing.T) {
	_, url := newFake(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"graph"}, "error: conctl graph needs KIND/NAME, e.g. landingzone/acme\nRun 'conctl graph --help' for usage.\n"},
		{[]string{"graph", "landingzone/acme", "--max-nodes", "0"}, "error: --max-nodes: 0 is not in 1..10000\nRun 'conctl graph --help' for usage.\n"},
		{[]string{"graph", "landingzone/acme", "--max-nodes", "10001"}, "error: --max-nodes: 10001 is not in 1..10000\nRun 'conctl graph --help' for usage.\n"},
		{[]string{"graph", "landingzone/acme", "-o", "wide"}, "error: --output: \"wide\" is not one of table, json, yaml, dot\nRun 'conctl graph --help' for usage.\n"},
		{[]string{"graph", "landingzone/acme"}, "error: graph of default/landingzone/acme: resource default/landingzone/acme not found\n"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := run(testContext(t), url, "", tc.args...)
			if r.code != 1 || r.stderr != tc.want || r.stdout != "" {
				t.Fatalf("exit %d, stdout %q, stderr:\n%s\nwant:\n%s", r.code, r.stdout, r.stderr, tc.want)
			}
		})
	}
}
