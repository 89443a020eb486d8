//go:build unix

package e2e

import (
	"fmt"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
	"pgregory.net/rapid"

	"github.com/convergehq/converge/sdk-go/client"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// Bounds on one case, so a case stays short and shrinks fast.
const (
	maxKinds      = 4
	maxRoots      = 6
	maxRestarts   = 2
	maxChildren   = 3
	maxCapacity   = 16
	slowHandlerMs = 600 // below the smallest task deadline drawn (2 s)
)

// actions is the state machine's action map; "" is the invariant check.
func (w *world) actions() map[string]func(*rapid.T) {
	return map[string]func(*rapid.T){
		"applyKind":      w.step(w.applyKind),
		"setPolicy":      w.step(w.setPolicy),
		"applyLeaf":      w.step(w.applyLeaf),
		"applyComposite": w.step(w.applyComposite),
		"updateSpec":     w.step(w.updateSpec),
		"delete":         w.step(w.deleteRes),
		"quarantine":     w.step(w.quarantine),
		"unquarantine":   w.step(w.unquarantine),
		"reconcile":      w.step(w.reconcile),
		"invokeOp":       w.step(w.invokeOp),
		"setConfig":      w.step(w.setConfig),
		"moveVersion":    w.step(w.moveVersion),
		"setBehaviour":   w.step(w.setBehaviour),
		"restartWorker":  w.step(w.restartWorker),
		"stopServing":    w.step(w.stopServing),
		"startServing":   w.step(w.startServing),
		"restartServer":  w.step(w.restartServer),
		"dryRun":         w.step(w.dryRun),
		"plan":           w.step(w.plan),
		"abandon":        w.step(w.abandon),
		"rolloutVersion": w.step(w.rolloutVersion),
		"manage":         w.step(w.manage),
		"replicaFault":   w.step(w.replicaFault),
		"":               w.checkStep,
	}
}

// step caps the number of actions of a case: past the cap every action
// does nothing, so rapid's sequence ends cheaply.
func (w *world) step(a func(*rapid.T)) func(*rapid.T) {
	return func(t *rapid.T) {
		if w.steps >= modelSteps {
			return
		}
		a(t)
		w.steps++
	}
}

func (w *world) note(t *rapid.T, format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	w.ran = append(w.ran, s)
	t.Logf("step %d: %s", w.steps+1, s)
}

func pick(t *rapid.T, from []string, label string) string {
	if len(from) == 0 {
		t.Skip("nothing to pick for " + label)
	}
	return rapid.SampledFrom(from).Draw(t, label)
}

func drawPolicy(t *rapid.T, composite bool) *convergev1.KindPolicy {
	p := &convergev1.KindPolicy{
		MaxInflight:           int32(rapid.SampledFrom([]int{0, 0, 1, 2, 3, 5, 10, 20}).Draw(t, "max_inflight")),
		ResyncIntervalSeconds: int32(rapid.SampledFrom([]int{0, 0, 1, 2}).Draw(t, "resync_interval_seconds")),
		TaskDeadlineSeconds:   int32(rapid.SampledFrom([]int{0, 2, 5}).Draw(t, "task_deadline_seconds")),
		// -1 never gives up; 0 gives up after the server's default cap.
		MaxTransientAttempts: int32(rapid.IntRange(-1, 4).Draw(t, "max_transient_attempts")),
	}
	if composite {
		p.OrphanGraceSeconds = int32(rapid.IntRange(0, 2).Draw(t, "orphan_grace_seconds"))
	}
	if rapid.IntRange(0, 5).Draw(t, "retain") == 0 {
		p.DeletionPolicy = "retain"
	}
	return p
}

func (w *world) applyKind(t *rapid.T) {
	if len(w.kinds) >= maxKinds {
		t.Skip("enough kinds")
	}
	composite := len(w.kindsWhere(func(k *mkind) bool { return !k.def.composite })) > 0 && rapid.Bool().Draw(t, "composite")
	prefix := map[bool]string{false: "leaf", true: "comp"}[composite]
	def := kindDef{name: fmt.Sprintf("%s%d", prefix, len(w.kinds)+1), composite: composite, versions: []int{1},
		finalizer: rapid.Bool().Draw(t, "finalizer")}
	if rapid.Bool().Draw(t, "verb") {
		def.verb = "ping"
	}
	def.settles = composite && rapid.Bool().Draw(t, "settles")
	k := &mkind{def: def, config: rapid.Bool().Draw(t, "config_schema"), policy: map[int]*convergev1.KindPolicy{1: drawPolicy(t, composite)}}
	w.note(t, "applyKind %s composite=%v settles=%v finalizer=%v verb=%q config=%v policy={%v}", def.name, composite, def.settles, def.finalizer, def.verb, k.config, k.policy[1])
	w.rec.setCap(kindVer{def.name, 1}, int(k.policy[1].GetMaxInflight()))
	mustCall(t, "apply kind "+def.name, w.api.ApplyKind, &convergev1.ApplyKindRequest{Manifest: modelManifest(def, 1, k.policy[1], k.config)})
	w.kinds[def.name] = k
	w.kindNames = append(w.kindNames, def.name)
	if rapid.Bool().Draw(t, "serve") {
		w.fleet.start(def, rapid.IntRange(1, maxCapacity).Draw(t, "capacity"))
	}
}

func (w *world) setPolicy(t *rapid.T) {
	w.rec.nudge() // it may run a resource before its retry time
	k := w.kinds[pick(t, w.kindNames, "kind")]
	v := rapid.SampledFrom(k.def.versions).Draw(t, "version")
	p := drawPolicy(t, k.def.composite)
	all := []string{"max_inflight", "resync_interval_seconds", "task_deadline_seconds", "max_transient_attempts"}
	paths := rapid.SliceOfNDistinct(rapid.SampledFrom(all), 1, len(all), func(s string) string { return s }).Draw(t, "fields")
	next := clonePolicy(k.policy[v])
	for _, f := range paths {
		switch f {
		case "max_inflight":
			next.MaxInflight = p.MaxInflight
		case "resync_interval_seconds":
			next.ResyncIntervalSeconds = p.ResyncIntervalSeconds
		case "task_deadline_seconds":
			next.TaskDeadlineSeconds = p.TaskDeadlineSeconds
		case "max_transient_attempts":
			next.MaxTransientAttempts = p.MaxTransientAttempts
		}
	}
	w.note(t, "setPolicy %s/v%d %v -> {%v}", k.def.name, v, paths, next)
	kv := kindVer{k.def.name, v}
	old, cur := int(k.policy[v].GetMaxInflight()), int(next.GetMaxInflight())
	w.rec.setCap(kv, looserCap(old, cur))
	mustCall(t, "update policy of "+kv.String(), w.api.UpdateKindPolicy, &convergev1.UpdateKindPolicyRequest{
		Kind: k.def.name, KindVersion: int32(v), Policy: next, UpdateMask: &fieldmaskpb.FieldMask{Paths: paths}})
	w.rec.setCap(kv, cur)
	k.policy[v] = next
	w.noteFailing(k)
}

// looserCap is the less strict of two max_inflight values (0: no cap).
func looserCap(a, b int) int {
	if a == 0 || b == 0 {
		return 0
	}
	return max(a, b)
}

func clonePolicy(p *convergev1.KindPolicy) *convergev1.KindPolicy {
	return &convergev1.KindPolicy{MaxInflight: p.GetMaxInflight(), TaskDeadlineSeconds: p.GetTaskDeadlineSeconds(),
		ResyncIntervalSeconds: p.GetResyncIntervalSeconds(), ResyncRecomposes: p.GetResyncRecomposes(),
		OrphanGraceSeconds: p.GetOrphanGraceSeconds(), MaxTransientAttempts: p.GetMaxTransientAttempts(),
		Retired: p.GetRetired(), DeletionPolicy: p.GetDeletionPolicy()}
}

// noteFailing records that k's resources may end Failed under its
// current behaviour and policies.
func (w *world) noteFailing(k *mkind) {
	b := w.fleet.behaviourOf(k.def.name)
	escalates := false
	for _, p := range k.policy {
		escalates = escalates || p.GetMaxTransientAttempts() >= 0
	}
	if b.mode == behTerminal || (b.mode == behFailAlways || b.mode == behFailFirst) && escalates {
		k.mayFail = true
	}
}

// applyRoot applies m as the model now has it and says whether the
// server took it. An apply admission refuses (its kind's backlog is at
// the server's bound) must change nothing; the caller undoes its change
// to the model.
func (w *world) applyRoot(t *rapid.T, m *mres) bool {
	var spec any = leafSpec{Counter: m.counter, Password: modelPassword(m.name, m.counter)}
	if m.comp != nil {
		spec = *m.comp
	}
	_, err := call(t, "apply "+m.key(), w.api.ApplyResource, &convergev1.ApplyResourceRequest{
		Kind: m.kind, KindVersion: int32(m.version), Name: m.name, Spec: mustStructOf(spec)})
	if _, refused := client.RetryAfter(err); refused && w.srv.maxBacklog > 0 {
		w.note(t, "  refused by admission: %v", err)
		admissionRefusals.Add(1)
		return false
	}
	if err != nil {
		t.Fatalf("%v", err)
	}
	if m.comp != nil {
		w.syncChildren(m)
	}
	return true
}

// checkUnchanged checks that a refused apply left m as it was: absent,
// for a new root, else at its generation with its spec.
func (w *world) checkUnchanged(t *rapid.T, m *mres, existed bool, gen int64) {
	r, err := call(t, "get "+m.key(), w.api.GetResource, &convergev1.GetResourceRequest{Kind: m.kind, Name: m.name})
	switch {
	case !existed && connect.CodeOf(err) != connect.CodeNotFound:
		t.Fatalf("an apply admission refused created %s: %v %v", m.key(), r, err)
	case existed && err != nil:
		t.Fatalf("%v", err)
	case existed && r.GetResource().GetGeneration() != gen:
		t.Fatalf("an apply admission refused moved %s from generation %d to %d", m.key(), gen, r.GetResource().GetGeneration())
	}
}

// generationOf is m's generation on the server (0 when it is absent).
func (w *world) generationOf(t *rapid.T, m *mres) int64 {
	r, err := call(t, "get "+m.key(), w.api.GetResource, &convergev1.GetResourceRequest{Kind: m.kind, Name: m.name})
	if err != nil {
		return 0
	}
	return r.GetResource().GetGeneration()
}

func (w *world) newRoot(t *rapid.T, m *mres) {
	if len(w.resWhere(func(m *mres) bool { return m.owner == "" })) >= maxRoots {
		t.Skip("enough roots")
	}
	w.nextName++
	m.name = fmt.Sprintf("r%d", w.nextName)
	w.res[m.key()] = m
	w.resKeys = append(w.resKeys, m.key())
	if !w.applyRoot(t, m) {
		delete(w.res, m.key())
		w.resKeys = w.resKeys[:len(w.resKeys)-1]
		w.checkUnchanged(t, m, false, 0)
	}
}

func (w *world) applyLeaf(t *rapid.T) {
	k := w.kinds[pick(t, w.kindsWhere(func(k *mkind) bool { return !k.def.composite }), "leaf kind")]
	m := &mres{kind: k.def.name, version: k.latest()}
	w.note(t, "applyLeaf %s/v%d r%d", m.kind, m.version, w.nextName+1)
	w.newRoot(t, m)
}

func (w *world) applyComposite(t *rapid.T) {
	k := w.kinds[pick(t, w.kindsWhere(func(k *mkind) bool { return k.def.composite }), "composite kind")]
	child := pick(t, w.kindsWhere(func(k *mkind) bool { return !k.def.composite }), "child kind")
	m := &mres{kind: k.def.name, version: 1, comp: &compSpec{N: rapid.IntRange(0, maxChildren).Draw(t, "children"), ChildKind: child}}
	w.note(t, "applyComposite %s r%d with %d children of %s", m.kind, w.nextName+1, m.comp.N, child)
	w.newRoot(t, m)
}

func (w *world) updateSpec(t *rapid.T) {
	m := w.res[pick(t, w.resWhere(func(m *mres) bool { return m.owner == "" && !m.deleted }), "root")]
	was, gen := *m, w.generationOf(t, m)
	if m.comp != nil {
		c := *m.comp
		was.comp = &c
	}
	m.counter++
	if m.comp != nil {
		m.comp.Counter = m.counter
		m.comp.N = rapid.IntRange(0, maxChildren).Draw(t, "children")
	}
	w.note(t, "updateSpec %s counter=%d %s", m.key(), m.counter, map[bool]string{true: fmt.Sprintf("children=%d", m.compN()), false: ""}[m.comp != nil])
	if !w.applyRoot(t, m) {
		*m = was
		w.checkUnchanged(t, m, gen > 0, gen)
	}
}

func (m *mres) compN() int {
	if m.comp == nil {
		return 0
	}
	return m.comp.N
}

func (w *world) deleteRes(t *rapid.T) {
	m := w.res[pick(t, w.resWhere(func(m *mres) bool {
		return !m.deleted && !m.orphan && !(m.owner != "" && (m.quarantined || w.res[m.owner].deleted))
	}), "resource")]
	w.note(t, "delete %s", m.key())
	w.recordDoomed(t, m)
	_, err := call(t, "delete "+m.key(), w.api.DeleteResource, &convergev1.DeleteResourceRequest{Kind: m.kind, Name: m.name})
	if err != nil && !(m.owner != "" && connect.CodeOf(err) == connect.CodeNotFound) {
		t.Fatalf("%v", err) // a child may be gone already: its composite re-creates it
	}
	if m.owner != "" {
		m.handDeleted, m.quarantined = true, false
		w.res[m.owner].handDeleted = true
		return
	}
	w.markDeleted(m)
}

func (w *world) quarantine(t *rapid.T) {
	m := w.res[pick(t, w.resWhere(func(m *mres) bool { return !m.quarantined && !m.orphan && !m.murky && w.exists(m) }), "resource")]
	w.note(t, "quarantine %s", m.key())
	res, err := call(t, "quarantine "+m.key(), w.api.QuarantineResource, &convergev1.QuarantineResourceRequest{Kind: m.kind, Name: m.name, Reason: "model"})
	if connect.CodeOf(err) == connect.CodeNotFound && m.owner != "" {
		t.Skip("the child does not exist yet") // its composer has not run
	}
	if err != nil {
		t.Fatalf("%v", err)
	}
	m.quarantined = true
	w.unordered[res.GetResource().GetUid()] = true
	if m.owner != "" && res.GetResource().GetDeletionRequestedAt() != nil {
		// A child already being deleted (a hand delete of a dependency it
		// has cascades to it): a teardown already running finishes, and its
		// composite re-creates it unquarantined; or it stays Deleting.
		m.murky = true
	}
}

// exists reports whether m should exist on the server now (a root, or a
// child whose composite's composer may have emitted it).
func (w *world) exists(m *mres) bool {
	return !(m.deleted && m.owner == "") && (m.owner == "" || !w.res[m.owner].deleted)
}

func (w *world) unquarantine(t *rapid.T) {
	w.rec.nudge() // it may run a resource before its retry time
	m := w.res[pick(t, w.resWhere(func(m *mres) bool { return m.quarantined && !m.murky }), "resource")]
	w.note(t, "unquarantine %s", m.key())
	_, err := call(t, "unquarantine "+m.key(), w.api.UnquarantineResource, &convergev1.UnquarantineResourceRequest{Kind: m.kind, Name: m.name, Reason: "model"})
	if err != nil && !(m.deleted && connect.CodeOf(err) == connect.CodeNotFound) {
		t.Fatalf("%v", err)
	}
	m.quarantined = false
}

func (w *world) reconcile(t *rapid.T) {
	w.rec.nudge() // it may run a resource before its retry time
	m := w.res[pick(t, w.resWhere(func(m *mres) bool { return !m.quarantined && !m.deleted && !m.orphan && !m.handDeleted }), "resource")]
	w.note(t, "reconcile %s", m.key())
	_, err := call(t, "reconcile "+m.key(), w.api.ReconcileResource, &convergev1.ReconcileResourceRequest{Kind: m.kind, Name: m.name, Reason: "model"})
	// A child may not exist yet, or its dependency gate may hold it.
	if err != nil && !(m.owner != "" && (connect.CodeOf(err) == connect.CodeNotFound || connect.CodeOf(err) == connect.CodeFailedPrecondition)) {
		t.Fatalf("%v", err)
	}
}

func (w *world) invokeOp(t *rapid.T) {
	m := w.res[pick(t, w.resWhere(func(m *mres) bool {
		return m.owner == "" && !m.deleted && !m.quarantined && w.kinds[m.kind].def.verb != ""
	}), "resource")]
	w.note(t, "invokeOp ping on %s", m.key())
	resp := mustCall(t, "invoke ping on "+m.key(), w.api.InvokeOperation, &convergev1.InvokeOperationRequest{Kind: m.kind, Name: m.name, Verb: "ping", Reason: "model"})
	m.ops = append(m.ops, resp.GetOperation().GetId())
}

func (w *world) setConfig(t *rapid.T) {
	w.rec.nudge() // it may run a resource before its retry time
	k := w.kinds[pick(t, w.kindsWhere(func(k *mkind) bool { return k.config }), "kind")]
	v := rapid.SampledFrom(k.def.versions).Draw(t, "version")
	region := fmt.Sprintf("region-%d", rapid.IntRange(1, 3).Draw(t, "region"))
	w.note(t, "setConfig %s/v%d default region=%s", k.def.name, v, region)
	mustCall(t, "apply config", w.api.ApplyProviderConfig, &convergev1.ApplyProviderConfigRequest{Config: &convergev1.ProviderConfig{
		Kind: k.def.name, KindVersion: int32(v), Name: "default", Config: mustStructOf(map[string]any{"region": region})}})
}
