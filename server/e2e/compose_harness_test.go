//go:build unix

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/convergehq/converge/sdk-go/client"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// composeTimeout bounds how long a composite may take to reach a state
// the composition tests wait for.
const composeTimeout = 30 * time.Second

// startLandingZone runs the landingzone example worker against s.
func startLandingZone(t *testing.T, s *server, name string, args ...string) *proc {
	t.Helper()
	return startProc(t, name, bin.landingzone, append([]string{"-server", s.url}, args...)...)
}

// startSpecWorker runs the specworker (testdata/specworker) against s.
func startSpecWorker(t *testing.T, s *server, name string, args ...string) *proc {
	t.Helper()
	return startProc(t, name, bin.specworker, append([]string{"-server", s.url}, args...)...)
}

// applyLandingZoneKinds applies the landing-zone example's kinds with
// conctl, as its README does.
func applyLandingZoneKinds(t *testing.T, s *server) {
	t.Helper()
	res := conctl(t, s, "", "apply", "-f", repoFile(t, "sdk-go/examples/landingzone/kinds.yaml"))
	if res.code != 0 {
		t.Fatalf("applying the landing-zone kinds:\n%s", res)
	}
}

// zoneDoc is a YAML document for a landingzone resource named and
// prefixed name; extra is added to its spec, e.g. ", vpc_cidr: 10.1.0.0/16".
func zoneDoc(name string, accounts int, extra string) string {
	return fmt.Sprintf("type: resource\nkind: landingzone\nkind_version: 1\nname: %s\nspec: {prefix: %s, accounts: %d%s}\n",
		name, name, accounts, extra)
}

// compositeDoc is the spec of the specworker's composite kinds (stack,
// graced, summary): the children and edges its composer emits.
type compositeDoc struct {
	Children []childDoc `json:"children,omitempty"`
	Edges    []edgeDoc  `json:"edges,omitempty"`
	Bulk     *bulkDoc   `json:"bulk,omitempty"`
}

type childDoc struct {
	Kind string         `json:"kind"`
	Name string         `json:"name"`
	Spec map[string]any `json:"spec,omitempty"`
}

// edgeDoc names its ends as KIND/NAME.
type edgeDoc struct {
	Dependent  string    `json:"dependent"`
	Dependency string    `json:"dependency"`
	Flows      []flowDoc `json:"flows,omitempty"`
}

type flowDoc struct {
	From string `json:"from,omitempty"`
	To   string `json:"to"`
}

// bulkDoc adds Count children of Kind named <composite>-bulk-<i>.
type bulkDoc struct {
	Kind  string `json:"kind"`
	Count int    `json:"count"`
}

// applyComposite creates or updates a composite of one of the
// specworker's kinds.
func applyComposite(t *testing.T, c *client.Client, kind, name string, doc compositeDoc) {
	t.Helper()
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	var spec map[string]any
	if err := json.Unmarshal(raw, &spec); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	if _, err := c.ApplyResource(ctx, &convergev1.ApplyResourceRequest{
		Kind: kind, KindVersion: 1, Name: name, Spec: mustStruct(t, spec),
	}); err != nil {
		t.Fatalf("apply %s/%s: %v", kind, name, err)
	}
}

// tryGetResource reads one resource; (nil, nil) when it does not exist.
func tryGetResource(c *client.Client, kind, name string) (*convergev1.Resource, error) {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	resp, err := c.GetResource(ctx, &convergev1.GetResourceRequest{Kind: kind, Name: name})
	if connect.CodeOf(err) == connect.CodeNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get resource %s/%s: %w", kind, name, err)
	}
	return resp.GetResource(), nil
}

// waitResource polls kind/name until ok holds for it and returns it; what
// says what is awaited, for the failure message. A resource that does not
// exist (yet) is passed to ok as nil.
func waitResource(t *testing.T, c *client.Client, kind, name, what string, timeout time.Duration,
	ok func(*convergev1.Resource) bool) *convergev1.Resource {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		r, err := tryGetResource(c, kind, name)
		if err == nil && ok(r) {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s, %s/%s is not %s: %s (last error: %v)", timeout, kind, name, what, explain(r), err)
		}
		time.Sleep(pollInterval)
	}
}

// waitPhase waits until kind/name is in phase.
func waitPhase(t *testing.T, c *client.Client, kind, name, phase string) *convergev1.Resource {
	t.Helper()
	return waitResource(t, c, kind, name, phase, composeTimeout, func(r *convergev1.Resource) bool {
		return r != nil && r.GetPhase() == phase
	})
}

// waitGone waits until kind/name no longer exists.
func waitGone(t *testing.T, c *client.Client, kind, name string, timeout time.Duration) {
	t.Helper()
	waitResource(t, c, kind, name, "gone", timeout, func(r *convergev1.Resource) bool { return r == nil })
}

// explain renders a resource with what it waits for, its rollup and its
// conditions, for failure messages.
func explain(r *convergev1.Resource) string {
	if r == nil {
		return "it does not exist"
	}
	var b strings.Builder
	b.WriteString(describe(r))
	if w := r.GetWaiting(); w != "" {
		fmt.Fprintf(&b, " waiting=%q", w)
	}
	if ru := r.GetRollup(); ru != nil {
		fmt.Fprintf(&b, " rollup={total %d ready %d reconciling %d degraded %d failed %d deleting %d excluded %d}",
			ru.GetTotal(), ru.GetReady(), ru.GetReconciling(), ru.GetDegraded(), ru.GetFailed(), ru.GetDeleting(), ru.GetExcluded())
		for _, c := range ru.GetCulprits() {
			fmt.Fprintf(&b, " culprit=%s/%s(%s: %q)", c.GetResource().GetKind(), c.GetResource().GetName(), c.GetPhase(), c.GetMessage())
		}
	}
	for _, c := range r.GetConditions() {
		fmt.Fprintf(&b, " [%s=%s %s: %q]", c.GetType(), c.GetStatus(), c.GetReason(), c.GetMessage())
	}
	return b.String()
}

// stringField returns a top-level string field of a spec or status.
func stringField(s *structpb.Struct, name string) string {
	return s.GetFields()[name].GetStringValue()
}

// deleteResource requests the deletion of kind/name over the API.
func deleteResource(t *testing.T, c *client.Client, kind, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	if _, err := c.DeleteResource(ctx, &convergev1.DeleteResourceRequest{Kind: kind, Name: name}); err != nil {
		t.Fatalf("delete %s/%s: %v", kind, name, err)
	}
}

// eventsOf lists the events of one resource, oldest first.
func eventsOf(t *testing.T, c *client.Client, kind, name string) []*convergev1.Event {
	t.Helper()
	var out []*convergev1.Event
	req := &convergev1.ListEventsRequest{Kind: kind, Name: name, PageSize: 1000}
	for {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		resp, err := c.ListEvents(ctx, req)
		cancel()
		if err != nil {
			t.Fatalf("list events of %s/%s: %v", kind, name, err)
		}
		out = append(out, resp.GetEvents()...)
		if resp.GetNextPageToken() == "" {
			break
		}
		req.PageToken = resp.GetNextPageToken()
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// lastEvent returns the newest event of kind/name with reason, or fails.
func lastEvent(t *testing.T, c *client.Client, kind, name, reason string) *convergev1.Event {
	t.Helper()
	all := eventsOf(t, c, kind, name)
	for i := len(all) - 1; i >= 0; i-- {
		if all[i].GetReason() == reason {
			return all[i]
		}
	}
	t.Fatalf("%s/%s has no %s event; its events: %s", kind, name, reason, renderEvents(all))
	return nil
}

func renderEvents(all []*convergev1.Event) string {
	var parts []string
	for _, e := range all {
		parts = append(parts, fmt.Sprintf("%s %s %q (%s)", e.GetTime().AsTime().Format("15:04:05.000000"), e.GetReason(), e.GetMessage(), e.GetActor()))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}

// waitOutput waits until p has printed text.
func waitOutput(t *testing.T, p *proc, text string, timeout time.Duration) {
	t.Helper()
	waitOutputCount(t, p, text, 1, timeout)
}

// waitOutputCount waits until p has printed text n times.
func waitOutputCount(t *testing.T, p *proc, text string, n int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for strings.Count(p.output(), text) < n {
		if p.exited() {
			t.Fatalf("%s exited before printing %q %d times", p.name, text, n)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not print %q %d times within %s", p.name, text, n, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
