//go:build unix

package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/convergehq/converge/sdk-go/client"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// mkind is the model's view of a kind: its versions' policies and what
// its handlers may have done.
type mkind struct {
	def    kindDef
	config bool
	policy map[int]*convergev1.KindPolicy
	// mayFail is set once the kind's handlers were told to fail in a way
	// that can pin Failed (terminally, or transiently with a
	// max_transient_attempts that escalates).
	mayFail bool
}

func (k *mkind) latest() int { return k.def.versions[len(k.def.versions)-1] }

// mres is the model's view of a resource.
type mres struct {
	kind    string
	version int
	name    string
	counter int
	comp    *compSpec // the spec of a composite; nil for a leaf
	owner   string    // the composite's key, for a child
	index   int       // the child's position among its composite's children
	orphan  bool      // a child its composite no longer emits
	// quarantined and deleted are what the model asked for.
	quarantined, deleted bool
	// handDeleted: a child was deleted by hand (it and its dependents come
	// back); cascade explains siblings in Deleting meanwhile.
	handDeleted bool
	// murky: a quarantined child its composite then stopped emitting, or
	// one quarantined while it was being deleted (its running teardown may
	// finish, and its composite re-creates it); the model accepts any end.
	murky bool
	// reclaimed: a child its composite stopped emitting and then emitted
	// again. The composer may have dropped it in between, so it may be
	// Deleting until its teardown runs; its composite re-creates it then.
	reclaimed bool
	ops       []string // operation ids invoked on it
	// observed: the model set its management policy to observe.
	observed bool
}

func resKey(kind, name string) string { return kind + "/" + name }

func (m *mres) key() string { return resKey(m.kind, m.name) }

// world is one model case: the system under test and the model of it.
type world struct {
	db    *pgxpool.Pool // the case's database, read only to see task ids
	srv   *mserver
	api   *client.Client
	fleet *fleet
	rec   *recorder

	kinds     map[string]*mkind
	kindNames []string // in creation order, so draws are reproducible
	res       map[string]*mres
	resKeys   []string // in creation order
	steps     int
	restarts  int
	nextName  int
	// doomed records, at each delete, the teardown order the deletion
	// must respect (see checkTeardownOrder).
	doomed []doomedPair
	// unordered holds the uids of resources quarantined at some point: a
	// quarantined resource's owner and dependencies are torn down without
	// waiting for it, so the order it would have kept is not checked.
	unordered map[string]bool
	ran       []string // the actions applied, for reports
	// replica is the case's read replica; nil for most cases.
	replica *mreplica
	// logOut logs on the test itself, outside rapid: rapid keeps the output
	// of the run it reports, and a failure it cannot reproduce would
	// otherwise lose what broke.
	logOut func(format string, args ...any)
}

// logBoth logs on rapid's test and on the test itself.
func (w *world) logBoth(t tb, format string, args ...any) {
	t.Helper()
	t.Logf(format, args...)
	if w.logOut != nil {
		w.logOut(format, args...)
	}
}

// doomedPair says that the teardown of first must finish before the
// teardown of then starts.
type doomedPair struct {
	first, then string // uids
	what        string
}

func (w *world) kindsWhere(ok func(*mkind) bool) []string {
	var out []string
	for _, n := range w.kindNames {
		if ok(w.kinds[n]) {
			out = append(out, n)
		}
	}
	return out
}

func (w *world) resWhere(ok func(*mres) bool) []string {
	var out []string
	for _, k := range w.resKeys {
		if ok(w.res[k]) {
			out = append(out, k)
		}
	}
	return out
}

// live reports whether the model wants m to exist when everything heals.
func (w *world) live(m *mres) bool {
	if m.deleted {
		return false
	}
	if m.owner == "" {
		return true
	}
	return !m.orphan && w.live(w.res[m.owner])
}

// syncChildren makes the model's children of composite c match what its
// composer emits for its current spec.
func (w *world) syncChildren(c *mres) {
	kids, _ := childrenOf(c.name, *c.comp)
	for i, kid := range kids {
		k := resKey(kid.Kind, kid.Name)
		m := w.res[k]
		if m == nil {
			m = &mres{kind: kid.Kind, version: 1, name: kid.Name, owner: c.key(), index: i}
			w.res[k] = m
			w.resKeys = append(w.resKeys, k)
		}
		m.reclaimed = m.reclaimed || m.orphan
		m.orphan, m.counter = false, c.comp.Counter
	}
	for _, k := range w.resKeys {
		if m := w.res[k]; m.owner == c.key() && m.index >= len(kids) && !m.deleted {
			m.orphan = true
			if m.quarantined {
				m.murky = true
			}
		}
	}
}

// markDeleted marks m and what it owns as deleted in the model.
func (w *world) markDeleted(m *mres) {
	m.deleted = true
	for _, k := range w.resKeys {
		if c := w.res[k]; c.owner == m.key() && !c.deleted {
			w.markDeleted(c)
		}
	}
}

// listAll reads every resource of the namespace.
func (w *world) listAll(t tb) map[string]*convergev1.Resource {
	t.Helper()
	out := map[string]*convergev1.Resource{}
	req := &convergev1.ListResourcesRequest{PageSize: 1000}
	for {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		resp, err := w.api.ListResources(ctx, req)
		cancel()
		if err != nil {
			t.Fatalf("list resources: %v", err)
		}
		for _, r := range resp.GetResources() {
			out[resKey(r.GetKind(), r.GetName())] = r
			if b, _ := protojson.Marshal(r); strings.Contains(string(b), modelSecretMark) {
				t.Fatalf("%s/%s came back with a secret in clear: %s", r.GetKind(), r.GetName(), b)
			}
		}
		w.fleet.mu.Lock()
		errs := w.fleet.secretErrs
		w.fleet.mu.Unlock()
		if len(errs) > 0 {
			t.Fatalf("a handler did not receive its secret in clear: %s", strings.Join(errs, "; "))
		}
		if resp.GetNextPageToken() == "" {
			return out
		}
		req.PageToken = resp.GetNextPageToken()
	}
}

// call runs one control-API call with the call timeout.
func call[Req, Resp any](t tb, what string, f func(context.Context, *Req) (*Resp, error), req *Req) (*Resp, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	resp, err := f(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return resp, nil
}

// mustCall is call for a call the model expects to succeed.
func mustCall[Req, Resp any](t tb, what string, f func(context.Context, *Req) (*Resp, error), req *Req) *Resp {
	t.Helper()
	resp, err := call(t, what, f, req)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return resp
}

// describeAll renders the model and the server's resources side by side.
func (w *world) describeAll(all map[string]*convergev1.Resource) string {
	var b strings.Builder
	keys := make([]string, 0, len(all))
	for k := range all {
		keys = append(keys, k)
	}
	for _, k := range w.resKeys {
		if all[k] == nil {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "  %s: model %s\n      server: %s\n", k, w.describeModel(w.res[k]), explainFull(all[k]))
	}
	for _, n := range w.kindNames {
		kd := w.kinds[n]
		fmt.Fprintf(&b, "  kind %s: versions %v finalizer %v verb %q config %v behaviour %s worker capacity %d (0: none)\n",
			n, kd.def.versions, kd.def.finalizer, kd.def.verb, kd.config, w.fleet.behaviourOf(n), w.fleet.capacityOf(n))
		for _, v := range kd.def.versions {
			fmt.Fprintf(&b, "    v%d policy %v\n", v, kd.policy[v])
		}
	}
	return b.String()
}

func (w *world) describeModel(m *mres) string {
	if m == nil {
		return "unknown to the model"
	}
	s := fmt.Sprintf("v%d counter %d live %v quarantined %v deleted %v orphan %v", m.version, m.counter, w.live(m), m.quarantined, m.deleted, m.orphan)
	if m.comp != nil {
		s += fmt.Sprintf(" children %d of %s", m.comp.N, m.comp.ChildKind)
	}
	if m.owner != "" {
		s += fmt.Sprintf(" child %d of %s", m.index, m.owner)
	}
	return s
}

// explainFull is explain with the counters the invariants read.
func explainFull(r *convergev1.Resource) string {
	if r == nil {
		return "does not exist"
	}
	f := r.GetFailure()
	return fmt.Sprintf("%s gen %d synced %d failure{terminal %v gen %d attempts %d %q} deleting %v spec %v status %v | %s",
		r.GetPhase(), r.GetGeneration(), r.GetSyncedGeneration(), f.GetTerminal(), f.GetGeneration(), f.GetAttempts(), f.GetMessage(),
		r.GetDeletionRequestedAt() != nil, r.GetSpec().AsMap(), r.GetStatus().AsMap(), explain(r))
}
