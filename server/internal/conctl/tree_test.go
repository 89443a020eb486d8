package conctl_test

import (
	"encoding/json"
	"strings"
	"testing"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

func TestTree(t *testing.T) {
	f, url := newFake(t)
	f.trees[rkey("default", "landingzone", "acme")] = acmeTree()

	r := run(testContext(t), url, "", "tree", "landingzone/acme")
	want := `RESOURCE                          PHASE         MESSAGE
landingzone/acme                  Failed        1/3 ready, 1 reconciling, 1 failed
├── account/prod *                Failed        1/2 ready, 1 failed
│   ├── vpc/prod-main *           Failed        CIDR 10.0.0.0/16 overlaps vpc/prod-legacy
│   └── vpc/prod-legacy           Ready         -
├── account/dev *                 Reconciling   0/2 ready, 2 reconciling
│   ├── route/dev-default *       Reconciling   dependency vpc/dev-main is not synced
│   └── vpc/dev-main              Reconciling   -
└── account/sandbox               Ready         1/1 ready
    └── vpc/sandbox-main          Ready         1/1 ready
        └── subnet/sandbox-a      Ready         1/1 ready
            └── ... 1 not shown
* on the path to a culprit
`
	if r.code != 0 || r.stdout != want {
		t.Fatalf("exit %d, stdout:\n%s\nwant:\n%s\nstderr: %s", r.code, r.stdout, want, r.stderr)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	req := f.treeReqs[0]
	if req.Namespace != "default" || req.Kind != "landingzone" || req.Name != "acme" || req.Depth != 3 || req.ChildrenPerNode != 20 {
		t.Fatalf("request %v, want default/landingzone/acme, depth 3, 20 children per node", req)
	}
}

func TestTreeCutByDepthAndChildren(t *testing.T) {
	f, url := newFake(t)
	f.trees[rkey("default", "landingzone", "acme")] = acmeTree()

	r := run(testContext(t), url, "", "tree", "landingzone/acme", "--depth", "1", "--children", "2", "--ascii")
	want := "" +
		"RESOURCE                  PHASE         MESSAGE\n" +
		"landingzone/acme          Failed        1/3 ready, 1 reconciling, 1 failed\n" +
		"|-- account/prod *        Failed        1/2 ready, 1 failed\n" +
		"|   `-- ... 2 not shown\n" +
		"|-- account/dev *         Reconciling   0/2 ready, 2 reconciling\n" +
		"|   `-- ... 2 not shown\n" +
		"`-- ... and 1 more\n" +
		"* on the path to a culprit\n"
	if r.code != 0 || r.stdout != want {
		t.Fatalf("exit %d, stdout:\n%s\nwant:\n%s\nstderr: %s", r.code, r.stdout, want, r.stderr)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if req := f.treeReqs[0]; req.Depth != 1 || req.ChildrenPerNode != 2 {
		t.Fatalf("request %v, want depth 1 and 2 children per node", req)
	}
}

func TestTreeWithoutCulpritsAndAcrossNamespaces(t *testing.T) {
	f, url := newFake(t)
	zone := &convergev1.ResourceRef{Namespace: "team-a", Kind: "landingzone", Name: "beta"}
	f.trees[rkey("team-a", "landingzone", "beta")] = node(zone, "Ready", "", false,
		node(&convergev1.ResourceRef{Kind: "account", Name: "main"}, "Ready", "", false),
		node(&convergev1.ResourceRef{Namespace: "network", Kind: "ipam", Name: "pool"}, "Ready", "", false),
	)
	r := run(testContext(t), url, "", "tree", "landingzone/beta", "-n", "team-a")
	want := "" +
		"RESOURCE                PHASE   MESSAGE\n" +
		"landingzone/beta        Ready   -\n" +
		"├── account/main        Ready   -\n" +
		"└── network/ipam/pool   Ready   -\n"
	if r.code != 0 || r.stdout != want {
		t.Fatalf("exit %d, stdout:\n%s\nwant:\n%s\nstderr: %s", r.code, r.stdout, want, r.stderr)
	}
}

func TestTreeJSONAndYAMLPrintTheTreeNode(t *testing.T) {
	f, url := newFake(t)
	f.trees[rkey("default", "landingzone", "acme")] = acmeTree()
	ctx := testContext(t)

	r := run(ctx, url, "", "tree", "landingzone/acme", "--depth", "1", "-o", "json")
	var got struct {
		Resource      map[string]string `json:"resource"`
		Phase         string            `json:"phase"`
		OnCulpritPath bool              `json:"on_culprit_path"`
		Children      []struct {
			Resource      map[string]string `json:"resource"`
			OnCulpritPath bool              `json:"on_culprit_path"`
			MoreChildren  int               `json:"more_children"`
		} `json:"children"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, r.stdout)
	}
	if got.Resource["name"] != "acme" || got.Phase != "Failed" || got.OnCulpritPath || len(got.Children) != 3 ||
		got.Children[0].Resource["name"] != "prod" || !got.Children[0].OnCulpritPath || got.Children[0].MoreChildren != 2 {
		t.Fatalf("JSON = %s, want the root TreeNode with 3 children, each cut", r.stdout)
	}
	if strings.Contains(r.stdout, `"root"`) {
		t.Errorf("JSON wraps the node in a response:\n%s", r.stdout)
	}

	r = run(ctx, url, "", "tree", "landingzone/acme", "--depth", "1", "-o", "yaml")
	if !strings.HasPrefix(r.stdout, "resource:\n  namespace: default\n  kind: landingzone\n  name: acme\nkind_version: 1\nphase: Failed\n") ||
		!strings.Contains(r.stdout, "\n    more_children: 2\n") {
		t.Fatalf("YAML:\n%s", r.stdout)
	}
}

func TestTreeErrors(t *testing.T) {
	f, url := newFake(t)
	f.trees[rkey("default", "landingzone", "acme")] = acmeTree()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"tree"}, "error: conctl tree needs KIND/NAME, e.g. landingzone/acme\nRun 'conctl tree --help' for usage.\n"},
		{[]string{"tree", "acme"}, "error: resource \"acme\": want KIND/NAME, e.g. greeting/hello-world\nRun 'conctl tree --help' for usage.\n"},
		{[]string{"tree", "landingzone/acme", "--depth", "0"}, "error: --depth: 0 is not in 1..10\nRun 'conctl tree --help' for usage.\n"},
		{[]string{"tree", "landingzone/acme", "--depth", "11"}, "error: --depth: 11 is not in 1..10\nRun 'conctl tree --help' for usage.\n"},
		{[]string{"tree", "landingzone/acme", "--children", "0"}, "error: --children: 0 is not in 1..1000\nRun 'conctl tree --help' for usage.\n"},
		{[]string{"tree", "landingzone/acme", "--children", "1001"}, "error: --children: 1001 is not in 1..1000\nRun 'conctl tree --help' for usage.\n"},
		{[]string{"tree", "landingzone/acme", "-o", "dot"}, "error: --output: \"dot\" is not one of table, json, yaml\nRun 'conctl tree --help' for usage.\n"},
		{[]string{"tree", "landingzone/nope"}, "error: tree of default/landingzone/nope: resource default/landingzone/nope not found\n"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := run(testContext(t), url, "", tc.args...)
			if r.code != 1 || r.stderr != tc.want || r.stdout != "" {
				t.Fatalf("exit %d, stdout %q, stderr:\n%s\nwant:\n%s", r.code, r.stdout, r.stderr, tc.want)
			}
		})
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.treeReqs) != 1 {
		t.Fatalf("%d tree requests, want 1: bad flags must not reach the server", len(f.treeReqs))
	}
}
