package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Ref names a resource.
type Ref struct {
	Namespace, Kind, Name string
}

func (r Ref) String() string { return r.Kind + "/" + r.Name }

// ChildSpec is a child a composer wants.
type ChildSpec struct {
	Kind    string
	Version int32
	Name    string
	Labels  []byte // JSON object
	Spec    []byte // JSON object, already validated against its kind
	// KindRevision is the revision of the child's kind Spec was validated
	// against.
	KindRevision int64
}

// EdgeSpec is an edge a composer declared: Dependent is a child,
// Dependency a child or a declared reference.
type EdgeSpec struct {
	Dependent  Ref
	Dependency Ref
	Flows      []byte // JSON array of {"from"|"expr", "to"}
}

// Composition is a composer's whole answer for one lease.
type Composition struct {
	Outcome
	Children   []ChildSpec
	Edges      []EdgeSpec
	References []Ref
	// OrphanGrace is the composite kind's grace for children it stops
	// emitting; 0 deletes them at once.
	OrphanGrace time.Duration
}

// ComposeResult says what ApplyComposition did.
type ComposeResult struct {
	OutcomeResult
	Created, Updated, Orphaned, Readopted, Deleted int
	// CreatedNames names the first children created (kind/name), for the
	// event: a child deleted by hand and created again is named there.
	CreatedNames []string
	// Refused is set when the composition could not apply; nothing was
	// written, and the caller reports it as a failure of the task.
	Refused *Refusal
}

// Refusal is why a composition was not applied.
type Refusal struct {
	Terminal bool
	Message  string
}

// waitingForDependencies marks a child whose dependencies the gate has
// not yet checked.
const waitingForDependencies = "waiting for its dependencies"

type existingChild struct {
	id       int64
	kind     string
	name     string
	orphaned bool
	deleting bool
	gated    bool
}

// ApplyComposition applies a composer's answer in one transaction, fenced
// like every outcome: children are created, updated, re-adopted or
// pruned (orphaned for the grace period, or deleted), the composite's
// edges are replaced, new and changed children are scheduled (or, when
// they have dependencies, handed to the gate), and the composite's own
// status is applied. Nothing of it is visible until it commits.
func (s *Store) ApplyComposition(ctx context.Context, c Composition) (ComposeResult, error) {
	var res ComposeResult
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		res = ComposeResult{}
		var parentID, rootID, generation int64
		var namespace string
		var deleting bool
		err := tx.QueryRow(ctx, `
			SELECT r.id, coalesce(r.root_id, r.id), r.namespace, r.generation, r.deletion_requested_at IS NOT NULL
			FROM resources r
			WHERE r.id = (SELECT resource_id FROM tasks WHERE id = $1)
			FOR NO KEY UPDATE`, c.TaskID).Scan(&parentID, &rootID, &namespace, &generation, &deleting)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // the task is gone: stale
		}
		if err != nil {
			return err
		}
		var epoch, taskGen int64
		err = tx.QueryRow(ctx, `SELECT epoch, generation FROM tasks WHERE id = $1 FOR UPDATE`, c.TaskID).Scan(&epoch, &taskGen)
		if errors.Is(err, pgx.ErrNoRows) || (err == nil && epoch != c.Epoch) {
			return nil
		}
		if err != nil {
			return err
		}
		if deleting {
			// The composite is being torn down: an answer composed before
			// that must not add or change children the teardown would then
			// wait for. The answer is dropped with its task.
			_, err := tx.Exec(ctx, `DELETE FROM tasks WHERE id = $1`, c.TaskID)
			return err
		}
		if taskGen != c.Generation {
			res.Superseded = true
			_, err := tx.Exec(ctx, `UPDATE tasks SET claimed_by = NULL, lease_expires_at = NULL, not_before = now() WHERE id = $1`, c.TaskID)
			return err
		}
		if msg, err := checkChildKinds(ctx, tx, c.Children); err != nil || msg != "" {
			if msg != "" {
				res.Refused = &Refusal{Message: msg}
			}
			return err
		}
		if msg, err := checkOwnership(ctx, tx, parentID, namespace, c.Children); err != nil || msg != "" {
			if msg != "" {
				res.Refused = &Refusal{Terminal: true, Message: msg}
			}
			return err
		}
		refs, msg, err := resolveRefs(ctx, tx, namespace, c.References)
		if err != nil || msg != "" {
			if msg != "" {
				res.Refused = &Refusal{Message: msg}
			}
			return err
		}
		existing, err := lockChildren(ctx, tx, parentID)
		if err != nil {
			return err
		}
		if err := recordAs(ctx, tx, SourceCompose, c.Actor); err != nil {
			return err
		}
		if err := applyChildren(ctx, tx, c, parentID, rootID, namespace, existing, refs, &res); err != nil {
			return err
		}
		// Until the rollup has counted the new children, the composite is
		// not Ready: it becomes Ready only through its rollup.
		if len(c.Children) > 0 {
			if _, err := tx.Exec(ctx, `UPDATE resources SET subtree = 'pending' WHERE id = $1 AND subtree <> 'pending'`, parentID); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `SELECT converge_wake($1::bigint[], 'rollup')`, []int64{parentID}); err != nil {
			return err
		}
		// The composite's own status and synced generation, and the fenced
		// removal of its task: the one success rule.
		rows, err := tx.Query(ctx, applySuccessSQL, []int64{c.TaskID}, []int64{c.Epoch}, []int64{c.Generation},
			[][]byte{c.Status}, []bool{c.Unhealthy}, [][]byte{c.Conditions}, []int64{c.ResyncAfter.Milliseconds()})
		if err != nil {
			return err
		}
		for rows.Next() {
			res.Applied = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if !res.Applied {
			return errCompositionLost
		}
		summary := fmt.Sprintf("children: %d created, %d updated, %d re-adopted, %d orphaned, %d deleted; %d edges",
			res.Created, res.Updated, res.Readopted, res.Orphaned, res.Deleted, len(c.Edges))
		if len(res.CreatedNames) > 0 {
			summary += "; created " + strings.Join(res.CreatedNames, ", ")
			if more := res.Created - len(res.CreatedNames); more > 0 {
				summary += fmt.Sprintf(" and %d more", more)
			}
		}
		ev := newEventBatch()
		ev.add(parentID, namespace, "", "", c.Generation, "Normal", "Composed", summary, c.Actor)
		return queueEventsFor(ctx, tx, ev)
	})
	if errors.Is(err, errCompositionLost) {
		return ComposeResult{}, nil
	}
	return res, err
}

var errCompositionLost = errors.New("composition lost its lease")

// maxNamedInEvent caps the children a Composed event names.
const maxNamedInEvent = 5

// queueEventsFor inserts events whose kind and name are filled from the
// resource rows (composition events name the composite by id only).
func queueEventsFor(ctx context.Context, tx pgx.Tx, ev *eventBatch) error {
	if len(ev.ids) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `
		INSERT INTO events (resource_id, namespace, kind, name, generation, type, reason, message, actor)
		SELECT r.id, r.namespace, r.kind, r.name, e.generation, e.type, e.reason, e.message, e.actor
		FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[])
		    AS e(id, generation, type, reason, message, actor)
		JOIN resources r ON r.id = e.id`, ev.ids, ev.generations, ev.types, ev.reasons, ev.messages, ev.actors)
	return err
}

// checkChildKinds locks the children's kinds and checks their revisions.
// A change means the children were validated against an old kind: the
// compose is retried.
func checkChildKinds(ctx context.Context, tx pgx.Tx, children []ChildSpec) (string, error) {
	want := map[[2]string]int64{}
	var kinds []string
	var versions []int32
	for _, ch := range children {
		k := [2]string{ch.Kind, fmt.Sprint(ch.Version)}
		if _, seen := want[k]; !seen {
			kinds, versions = append(kinds, ch.Kind), append(versions, ch.Version)
		}
		want[k] = ch.KindRevision
	}
	if len(kinds) == 0 {
		return "", nil
	}
	rows, err := tx.Query(ctx, `
		SELECT k.kind, k.kind_version, k.revision, k.retired FROM kinds k
		JOIN unnest($1::text[], $2::int[]) AS i(kind, kind_version) ON k.kind = i.kind AND k.kind_version = i.kind_version
		FOR KEY SHARE OF k`, kinds, versions)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	got := map[[2]string]int64{}
	for rows.Next() {
		var kind string
		var version int32
		var rev int64
		var retired bool
		if err := rows.Scan(&kind, &version, &rev, &retired); err != nil {
			return "", err
		}
		got[[2]string{kind, fmt.Sprint(version)}] = rev
	}
	if err := rows.Err(); err != nil {
		return "", err
	}
	for k, rev := range want {
		if got[k] != rev {
			return fmt.Sprintf("kind %s v%s changed or was deleted while composing; composing again", k[0], k[1]), nil
		}
	}
	return "", nil
}

// checkOwnership refuses children whose names are taken by resources
// that belong to someone else.
func checkOwnership(ctx context.Context, tx pgx.Tx, parentID int64, namespace string, children []ChildSpec) (string, error) {
	if len(children) == 0 {
		return "", nil
	}
	kinds, names := make([]string, len(children)), make([]string, len(children))
	for i, ch := range children {
		kinds[i], names[i] = ch.Kind, ch.Name
	}
	rows, err := tx.Query(ctx, `
		SELECT r.kind, r.name FROM resources r
		JOIN unnest($2::text[], $3::text[]) AS c(kind, name) ON r.kind = c.kind AND r.name = c.name
		WHERE r.namespace = $1 AND r.owner_id IS DISTINCT FROM $4
		ORDER BY r.kind, r.name LIMIT 5`, namespace, kinds, names, parentID)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var taken []string
	for rows.Next() {
		var kind, name string
		if err := rows.Scan(&kind, &name); err != nil {
			return "", err
		}
		taken = append(taken, kind+"/"+name)
	}
	if err := rows.Err(); err != nil || len(taken) == 0 {
		return "", err
	}
	return fmt.Sprintf("child name(s) already taken by resources this composite does not own: %s (give children names unique to the composite, e.g. prefixed with its name)",
		strings.Join(taken, ", ")), nil
}

// resolveRefs finds the declared references; a missing one makes the
// compose wait and retry.
func resolveRefs(ctx context.Context, tx pgx.Tx, namespace string, refs []Ref) (map[Ref]int64, string, error) {
	out := map[Ref]int64{}
	if len(refs) == 0 {
		return out, "", nil
	}
	ns, kinds, names := make([]string, len(refs)), make([]string, len(refs)), make([]string, len(refs))
	for i, r := range refs {
		if r.Namespace == "" {
			r.Namespace = namespace
		}
		ns[i], kinds[i], names[i] = r.Namespace, r.Kind, r.Name
	}
	rows, err := tx.Query(ctx, `
		SELECT r.id, r.namespace, r.kind, r.name FROM resources r
		JOIN unnest($1::text[], $2::text[], $3::text[]) AS x(namespace, kind, name)
		  ON r.namespace = x.namespace AND r.kind = x.kind AND r.name = x.name`, ns, kinds, names)
	if err != nil {
		return nil, "", err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var r Ref
		if err := rows.Scan(&id, &r.Namespace, &r.Kind, &r.Name); err != nil {
			return nil, "", err
		}
		out[r] = id
	}
	if err := rows.Err(); err != nil {
		return nil, "", err
	}
	for i := range refs {
		r := Ref{ns[i], kinds[i], names[i]}
		if _, ok := out[r]; !ok {
			return nil, fmt.Sprintf("reference %s/%s/%s does not exist yet; composing again later", r.Namespace, r.Kind, r.Name), nil
		}
	}
	return out, "", nil
}

// lockChildren locks the composite's current children in id order.
func lockChildren(ctx context.Context, tx pgx.Tx, parentID int64) (map[[2]string]existingChild, error) {
	rows, err := tx.Query(ctx, `
		SELECT r.id, r.kind, r.name, r.orphaned_until IS NOT NULL,
		       r.deletion_requested_at IS NOT NULL, r.desired_spec IS NOT NULL
		FROM resources r WHERE r.owner_id = $1 ORDER BY r.id FOR NO KEY UPDATE`, parentID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[[2]string]existingChild{}
	for rows.Next() {
		var e existingChild
		if err := rows.Scan(&e.id, &e.kind, &e.name, &e.orphaned, &e.deleting, &e.gated); err != nil {
			return nil, err
		}
		out[[2]string{e.kind, e.name}] = e
	}
	return out, rows.Err()
}

// applyChildren writes the child set and the edges.
func applyChildren(ctx context.Context, tx pgx.Tx, c Composition, parentID, rootID int64, namespace string,
	existing map[[2]string]existingChild, refs map[Ref]int64, res *ComposeResult) error {
	// Which children have dependencies: the gate schedules those.
	gated := map[[2]string]bool{}
	for _, e := range c.Edges {
		gated[[2]string{e.Dependent.Kind, e.Dependent.Name}] = true
	}
	var ins, upd childColumns
	desired := map[[2]string]bool{}
	for _, ch := range c.Children {
		k := [2]string{ch.Kind, ch.Name}
		desired[k] = true
		if old, ok := existing[k]; ok {
			if old.deleting {
				continue // recreated by a later compose once it is gone
			}
			upd.add(old.id, ch, gated[k])
			if old.orphaned {
				res.Readopted++
			}
			continue
		}
		ins.add(0, ch, gated[k])
	}
	ids := map[[2]string]int64{}
	for k, e := range existing {
		ids[k] = e.id
	}
	var schedule, gate []int64
	if len(ins.kinds) > 0 {
		rows, err := tx.Query(ctx, `
			INSERT INTO resources (namespace, kind, kind_version, name, labels, spec, desired_spec, owner_id, root_id, waiting)
			SELECT $1, c.kind, c.kind_version, c.name, c.labels, c.spec,
			       CASE WHEN c.gated THEN c.spec END, $2, $3,
			       CASE WHEN c.gated THEN '`+waitingForDependencies+`' END
			FROM unnest($4::text[], $5::int[], $6::text[], $7::jsonb[], $8::jsonb[], $9::bool[])
			    AS c(kind, kind_version, name, labels, spec, gated)
			ORDER BY c.kind, c.name
			RETURNING id, kind, name, waiting IS NOT NULL`,
			namespace, parentID, rootID, ins.kinds, ins.versions, ins.names, ins.labels, ins.specs, ins.gated)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id int64
			var kind, name string
			var isGated bool
			if err := rows.Scan(&id, &kind, &name, &isGated); err != nil {
				rows.Close()
				return err
			}
			ids[[2]string{kind, name}] = id
			res.Created++
			if len(res.CreatedNames) < maxNamedInEvent {
				res.CreatedNames = append(res.CreatedNames, kind+"/"+name)
			}
			if isGated {
				gate = append(gate, id)
			} else {
				schedule = append(schedule, id)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
	}
	if len(upd.ids) > 0 {
		// Only rows that change are written; a re-emitted child with the
		// same spec costs nothing (no generation bump, no churn). A gated
		// child keeps its spec until the gate writes the flowed values in;
		// when what it is asked for changes, its terminal failure no longer
		// pins it: it failed on what it was asked for before.
		rows, err := tx.Query(ctx, `
			UPDATE resources r SET
			    kind_version = u.kind_version,
			    labels = u.labels,
			    spec = CASE WHEN u.gated THEN r.spec ELSE u.spec END,
			    desired_spec = CASE WHEN u.gated THEN u.spec END,
			    generation = r.generation + CASE WHEN NOT u.gated
			        AND (r.spec <> u.spec OR r.kind_version <> u.kind_version) THEN 1 ELSE 0 END,
			    waiting = CASE WHEN NOT u.gated THEN NULL
			        WHEN coalesce(r.desired_spec, r.spec) <> u.spec OR r.waiting IS NOT NULL OR r.desired_spec IS NULL
			        THEN coalesce(r.waiting, '`+waitingForDependencies+`') END,
			    failure_terminal = r.failure_terminal AND NOT (u.gated AND coalesce(r.desired_spec, r.spec) <> u.spec),
			    orphaned_until = NULL,
			    resource_version = r.resource_version + 1,
			    updated_at = now()
			FROM unnest($1::bigint[], $2::int[], $3::jsonb[], $4::jsonb[], $5::bool[])
			    AS u(id, kind_version, labels, spec, gated)
			WHERE r.id = u.id
			  AND (r.kind_version <> u.kind_version OR r.labels <> u.labels
			       OR coalesce(r.desired_spec, r.spec) <> u.spec
			       OR (r.desired_spec IS NOT NULL) <> u.gated
			       OR r.orphaned_until IS NOT NULL)
			RETURNING r.id, u.gated, NOT converge_synced(r)`,
			upd.ids, upd.versions, upd.labels, upd.specs, upd.gated)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id int64
			var isGated, pending bool
			if err := rows.Scan(&id, &isGated, &pending); err != nil {
				rows.Close()
				return err
			}
			res.Updated++
			switch {
			case isGated:
				gate = append(gate, id)
			case pending:
				schedule = append(schedule, id)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
	}
	// Prune what the composer no longer wants.
	var orphan, doomed []int64
	for k, e := range existing {
		if desired[k] || e.deleting || e.orphaned {
			continue
		}
		if c.OrphanGrace > 0 {
			orphan = append(orphan, e.id)
		} else {
			doomed = append(doomed, e.id)
		}
	}
	if len(orphan) > 0 {
		tag, err := tx.Exec(ctx, `UPDATE resources SET orphaned_until = now() + $2 * interval '1 millisecond',
			resource_version = resource_version + 1, updated_at = now()
			WHERE id = ANY($1::bigint[]) AND orphaned_until IS NULL AND NOT quarantined`, orphan, c.OrphanGrace.Milliseconds())
		if err != nil {
			return err
		}
		res.Orphaned = int(tag.RowsAffected())
	}
	if len(doomed) > 0 {
		n, err := markForDeletion(ctx, tx, doomed, "composite:"+fmt.Sprint(parentID), "its composite no longer emits it")
		if err != nil {
			return err
		}
		res.Deleted = n
	}
	// Replace the composite's edges, and wake the gate of every dependent
	// whose incoming edges changed.
	changed, err := replaceEdges(ctx, tx, parentID, c.Edges, ids, refs)
	if err != nil {
		return err
	}
	gate = append(gate, changed...)
	if len(schedule) > 0 {
		sort.Slice(schedule, func(i, j int) bool { return schedule[i] < schedule[j] })
		if _, err := tx.Exec(ctx, scheduleReconcileSQL, schedule); err != nil {
			return err
		}
	}
	if len(gate) > 0 {
		if _, err := tx.Exec(ctx, `SELECT converge_wake($1::bigint[], 'gate')`, dedupe(gate)); err != nil {
			return err
		}
	}
	return nil
}

// replaceEdges swaps the composite's edges for the new set and returns
// the dependents whose incoming edges changed.
func replaceEdges(ctx context.Context, tx pgx.Tx, parentID int64, edges []EdgeSpec, ids map[[2]string]int64, refs map[Ref]int64) ([]int64, error) {
	type pair struct{ dependent, dependency int64 }
	next := map[pair][]byte{}
	var dependents, dependencies []int64
	var flows [][]byte
	for _, e := range edges {
		dep, ok := ids[[2]string{e.Dependent.Kind, e.Dependent.Name}]
		if !ok {
			continue // a child being deleted: it has no edges any more
		}
		target, ok := ids[[2]string{e.Dependency.Kind, e.Dependency.Name}]
		if !ok {
			target, ok = refs[e.Dependency]
		}
		if !ok {
			continue
		}
		next[pair{dep, target}] = e.Flows
		dependents, dependencies, flows = append(dependents, dep), append(dependencies, target), append(flows, e.Flows)
	}
	rows, err := tx.Query(ctx, `DELETE FROM edges WHERE owner_id = $1 RETURNING dependent_id, dependency_id, flows`, parentID)
	if err != nil {
		return nil, err
	}
	changed := map[int64]bool{}
	seen := map[pair]bool{}
	var released []int64
	for rows.Next() {
		var p pair
		var old []byte
		if err := rows.Scan(&p.dependent, &p.dependency, &old); err != nil {
			rows.Close()
			return nil, err
		}
		seen[p] = true
		f, kept := next[p]
		if !kept || !sameJSON(f, old) {
			changed[p.dependent] = true
		}
		if !kept {
			released = append(released, p.dependency)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	// A deleting dependency whose teardown waited for this dependent no
	// longer waits for it: its teardown looks again.
	if len(released) > 0 {
		if _, err := tx.Exec(ctx, `
			SELECT converge_wake(array_agg(r.id ORDER BY r.id), 'teardown') FROM resources r
			WHERE r.id = ANY($1::bigint[]) AND r.deletion_requested_at IS NOT NULL
			HAVING count(*) > 0`, released); err != nil {
			return nil, err
		}
	}
	for p := range next {
		if !seen[p] {
			changed[p.dependent] = true
		}
	}
	if len(dependents) > 0 {
		if _, err := tx.Exec(ctx, `
			INSERT INTO edges (dependent_id, dependency_id, owner_id, flows)
			SELECT n.dependent_id, n.dependency_id, $1, n.flows
			FROM unnest($2::bigint[], $3::bigint[], $4::jsonb[]) AS n(dependent_id, dependency_id, flows)
			ORDER BY n.dependent_id, n.dependency_id
			ON CONFLICT (dependent_id, dependency_id) DO UPDATE SET flows = EXCLUDED.flows, owner_id = EXCLUDED.owner_id`,
			parentID, dependents, dependencies, flows); err != nil {
			return nil, err
		}
	}
	out := make([]int64, 0, len(changed))
	for id := range changed {
		out = append(out, id)
	}
	return out, nil
}

// sameJSON compares two JSON documents by value.
func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

type childColumns struct {
	ids           []int64
	kinds, names  []string
	versions      []int32
	labels, specs [][]byte
	gated         []bool
}

func (c *childColumns) add(id int64, ch ChildSpec, gated bool) {
	c.ids = append(c.ids, id)
	c.kinds = append(c.kinds, ch.Kind)
	c.names = append(c.names, ch.Name)
	c.versions = append(c.versions, ch.Version)
	c.labels = append(c.labels, ch.Labels)
	c.specs = append(c.specs, ch.Spec)
	c.gated = append(c.gated, gated)
}

func dedupe(ids []int64) []int64 {
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	out := ids[:0]
	for i, id := range ids {
		if i == 0 || id != ids[i-1] {
			out = append(out, id)
		}
	}
	return out
}
