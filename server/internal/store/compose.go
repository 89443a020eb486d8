package store

import (
	"context"
	"errors"
	"fmt"
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
	// Settles says the composite's kind has a childrenSettled reaction:
	// its status is that reaction's projection of the children.
	Settles bool
}

// ComposeResult says what ApplyComposition did.
type ComposeResult struct {
	OutcomeResult
	Created, Updated, Orphaned, Readopted, Deleted int
	// CreatedNames names the first children created (kind/name), for the
	// event: a child deleted by hand and created again is named there.
	CreatedNames []string
	// regated counts the children whose incoming edges changed.
	regated int
	// Refused is set when the composition could not apply; nothing was
	// written, and the caller reports it as a failure of the task.
	Refused *Refusal
}

// changedChildren says whether the answer changed the child set or the
// edges between children: what the composite's rollup has counted.
func (r ComposeResult) changedChildren() bool {
	return r.Created+r.Updated+r.Readopted+r.Orphaned+r.Deleted+r.regated > 0
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
		// Until the rollup has counted what changed in its children, the
		// composite is not Ready: it becomes Ready only through its rollup.
		// An answer that changed no child leaves the rollup true, so a
		// composite already Ready at this generation stays Ready, unless
		// the answer's status replaces a childrenSettled projection: then
		// the rollup settles it again, which runs that reaction.
		if res.changedChildren() || (c.Settles && c.Status != nil) {
			if _, err := tx.Exec(ctx, `UPDATE resources SET subtree = 'pending', resource_version = resource_version + 1
				WHERE id = $1 AND subtree <> 'pending'`, parentID); err != nil {
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
