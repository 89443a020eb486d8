package conctl_test

import (
	"strings"
	"testing"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

func TestDescribeCompositeWithCulprits(t *testing.T) {
	f, url := newFake(t)
	f.add(acmeResource())
	f.trees[rkey("default", "landingzone", "acme")] = acmeTree()

	r := run(testContext(t), url, "", "describe", "resource", "landingzone/acme")
	want := `Namespace:          default
Kind:               landingzone v1
Name:               acme
UID:                uid-acme
Labels:             <none>
Created:            2026-11-29T11:00:00Z (60m ago)
Updated:            2026-11-29T11:58:00Z (2m ago)
Phase:              Failed
Generation:         2 (synced 2)
Healthy:            true
Reconciles:         5
Rollup:             1/3 ready, 1 reconciling, 1 failed
Culprits:
  RESOURCE            PHASE         VIA            MESSAGE
  vpc/prod-main       Failed        account/prod   CIDR 10.0.0.0/16 overlaps vpc/prod-legacy
  route/dev-default   Reconciling   account/dev    dependency vpc/dev-main is not synced
Failure:            <none>
Conditions:
  TYPE    STATUS   REASON        AGE   MESSAGE
  Ready   False    ChildFailed   2m    vpc/prod-main: CIDR 10.0.0.0/16 overlaps vpc/prod-legacy
Spec:               <none>
Status:             <none>
Tree:
  RESOURCE                          PHASE         MESSAGE
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
  Not every descendant is shown; for more: conctl tree landingzone/acme --depth 10 --children 100
Events:             <none>
`
	if r.code != 0 || r.stdout != want {
		t.Fatalf("exit %d, stdout:\n%s\nwant:\n%s\nstderr: %s", r.code, r.stdout, want, r.stderr)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.treeReqs) != 1 || f.treeReqs[0].Depth != 3 || f.treeReqs[0].ChildrenPerNode != 20 {
		t.Fatalf("tree requests %v, want one of depth 3 with 20 children per node", f.treeReqs)
	}
}

func TestDescribeChildWithOwnerAndWaiting(t *testing.T) {
	f, url := newFake(t)
	f.add(routeResource())

	r := run(testContext(t), url, "", "describe", "resource", "route/dev-default")
	want := `Namespace:          default
Kind:               route v1
Name:               dev-default
UID:                uid-route
Owner:              account/dev
Root:               landingzone/acme
Labels:             <none>
Created:            2026-11-29T11:00:00Z (60m ago)
Updated:            2026-11-29T11:00:00Z (60m ago)
Deletion policy:    retain
Phase:              Reconciling
Waiting:            dependency vpc/dev-main is not synced
Generation:         1 (synced 0)
Healthy:            false
Reconciles:         0
Failure:            <none>
Conditions:         <none>
Spec:               <none>
Status:             <none>
Events:             <none>
`
	if r.code != 0 || r.stdout != want {
		t.Fatalf("exit %d, stdout:\n%s\nwant:\n%s\nstderr: %s", r.code, r.stdout, want, r.stderr)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.treeReqs) != 0 {
		t.Fatalf("a resource without a rollup is not a composite; tree requests: %v", f.treeReqs)
	}
}

func TestDescribeOwnerThatIsTheRootHasNoRootLine(t *testing.T) {
	f, url := newFake(t)
	acct := &convergev1.Resource{Namespace: "team-a", Kind: "account", Name: "dev", Phase: "Ready",
		Owner: &convergev1.ResourceRef{Kind: "landingzone", Name: "acme"}, // no namespace: the resource's own
		Root:  &convergev1.ResourceRef{Namespace: "team-a", Kind: "landingzone", Name: "acme"},
	}
	f.add(acct)
	r := run(testContext(t), url, "", "describe", "resource", "account/dev", "-n", "team-a")
	if r.code != 0 || !strings.Contains(r.stdout, "\nOwner:              landingzone/acme\n") || strings.Contains(r.stdout, "Root:") {
		t.Fatalf("exit %d, stdout:\n%s\nwant an Owner line and no Root line", r.code, r.stdout)
	}
	if strings.Contains(r.stdout, "Deletion policy:") || strings.Contains(r.stdout, "Waiting:") {
		t.Fatalf("stdout:\n%s\nshows a deletion policy or a wait that is not set", r.stdout)
	}
}

func TestDescribeCompositeWithoutChildrenOrCulprits(t *testing.T) {
	f, url := newFake(t)
	res := &convergev1.Resource{Namespace: "team-a", Kind: "landingzone", Name: "empty", Phase: "Ready", Rollup: &convergev1.Rollup{}}
	f.add(res)
	f.trees[rkey("team-a", "landingzone", "empty")] = node(&convergev1.ResourceRef{Namespace: "team-a", Kind: "landingzone", Name: "empty"}, "Ready", "", false)

	r := run(testContext(t), url, "", "describe", "resource", "landingzone/empty", "-n", "team-a")
	for _, want := range []string{
		"\nRollup:             0/0 ready\nCulprits:           <none>\n",
		"\nTree:\n  RESOURCE            PHASE   MESSAGE\n  landingzone/empty   Ready   -\nEvents:",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "on the path to a culprit") || strings.Contains(r.stdout, "Not every descendant") {
		t.Errorf("stdout has a legend or a hint with nothing to explain:\n%s", r.stdout)
	}
}

func TestDescribeCompositeWhenTheTreeCannotBeFetched(t *testing.T) {
	f, url := newFake(t)
	f.add(acmeResource()) // no tree stored: the fake answers NotFound

	r := run(testContext(t), url, "", "describe", "resource", "landingzone/acme")
	want := "\nTree:               could not be shown: resource default/landingzone/acme not found\nEvents:"
	if r.code != 0 || !strings.Contains(r.stdout, want) || !strings.Contains(r.stdout, "\nCulprits:\n") {
		t.Fatalf("exit %d, stdout:\n%s\nwant the rest of the report and %q", r.code, r.stdout, want)
	}
}

func TestDescribeASCIITree(t *testing.T) {
	f, url := newFake(t)
	f.add(acmeResource())
	f.trees[rkey("default", "landingzone", "acme")] = acmeTree()

	r := run(testContext(t), url, "", "describe", "resource", "landingzone/acme", "--ascii")
	for _, want := range []string{"\n  |-- account/prod *  ", "\n  |   `-- vpc/prod-legacy  ", "\n          `-- subnet/sandbox-a  ", "\n              `-- ... 1 not shown\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.ContainsAny(r.stdout, "├└│") {
		t.Errorf("--ascii output has box-drawing characters:\n%s", r.stdout)
	}
}
