package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// KindKey names a kind version.
type KindKey struct {
	Kind    string `json:"kind"`
	Version int32  `json:"version"`
}

// PlanChild is a composite's child as a plan compares it.
type PlanChild struct {
	ID          int64
	Kind        string
	Version     int32
	Name        string
	Labels      []byte
	Spec        []byte
	DesiredSpec []byte // what the composer asked for, before flows; nil when not gated
	Status      []byte
	Phase       string
	// Blocks: it holds its dependents (converge_blocks_dependents).
	Blocks   bool
	Orphaned bool
	Deleting bool
}

// PlanEdge is one of a composite's edges with its flows.
type PlanEdge struct {
	Dependent  Ref // a child (namespace empty)
	Dependency Ref // a child (namespace empty) or a reference
	Flows      []byte
	// Dependency's current state, for a reference outside the composite.
	Phase           string
	Blocks          bool
	Deleting        bool
	Status, DepSpec []byte
}

// PlanSubject is what a plan reads of one composite: what its composer's
// task would carry (as a claim would read it) and its current children
// and edges.
type PlanSubject struct {
	Claimed
	Children []PlanChild
	Edges    []PlanEdge
}

// ReadPlanSubject reads a composite; ErrNotFound when it does not exist.
func (s *Store) ReadPlanSubject(ctx context.Context, key ResourceKey) (PlanSubject, error) {
	var p PlanSubject
	db := s.db(ctx)
	err := db.QueryRow(ctx, `
		SELECT r.id, r.kind, r.kind_version, r.generation, r.namespace, r.name, r.labels, r.spec, r.status,
		       r.provider_config, r.rejected_status
		FROM resources r WHERE r.namespace = $1 AND r.kind = $2 AND r.name = $3`, key.Namespace, key.Kind, key.Name).
		Scan(&p.ResourceID, &p.Kind, &p.Version, &p.Generation, &p.Namespace, &p.Name, &p.Labels, &p.Spec, &p.Status,
			&p.ProviderConfig, &p.RejectedStatus)
	if errors.Is(err, pgx.ErrNoRows) {
		return p, ErrNotFound
	}
	if err != nil {
		return p, err
	}
	p.Exists = true
	rows, err := db.Query(ctx, `
		SELECT c.id, c.kind, c.kind_version, c.name, c.labels, c.spec, c.desired_spec, c.status, converge_phase(c),
		       converge_blocks_dependents(c), c.orphaned_until IS NOT NULL, c.deletion_requested_at IS NOT NULL
		FROM resources c WHERE c.owner_id = $1 ORDER BY c.kind, c.name`, p.ResourceID)
	if err != nil {
		return p, err
	}
	for rows.Next() {
		var c PlanChild
		if err := rows.Scan(&c.ID, &c.Kind, &c.Version, &c.Name, &c.Labels, &c.Spec, &c.DesiredSpec, &c.Status, &c.Phase,
			&c.Blocks, &c.Orphaned, &c.Deleting); err != nil {
			rows.Close()
			return p, err
		}
		p.Children = append(p.Children, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return p, err
	}
	rows, err = db.Query(ctx, `
		SELECT t.kind, t.name, d.namespace, d.kind, d.name, d.owner_id IS NOT DISTINCT FROM $1, e.flows,
		       converge_phase(d), converge_blocks_dependents(d), d.deletion_requested_at IS NOT NULL, d.status, d.spec
		FROM edges e JOIN resources t ON t.id = e.dependent_id JOIN resources d ON d.id = e.dependency_id
		WHERE e.owner_id = $1 ORDER BY t.kind, t.name, d.namespace, d.kind, d.name`, p.ResourceID)
	if err != nil {
		return p, err
	}
	defer rows.Close()
	for rows.Next() {
		var e PlanEdge
		var child bool
		if err := rows.Scan(&e.Dependent.Kind, &e.Dependent.Name, &e.Dependency.Namespace, &e.Dependency.Kind,
			&e.Dependency.Name, &child, &e.Flows, &e.Phase, &e.Blocks, &e.Deleting, &e.Status, &e.DepSpec); err != nil {
			return p, err
		}
		if child {
			e.Dependency.Namespace = ""
		}
		p.Edges = append(p.Edges, e)
	}
	return p, rows.Err()
}

// ReadReferences reads resources a composition names outside its
// composite, for the plan's gate: what it would find there now.
func (s *Store) ReadReferences(ctx context.Context, refs []Ref) (map[Ref]PlanEdge, error) {
	out := map[Ref]PlanEdge{}
	if len(refs) == 0 {
		return out, nil
	}
	ns, kinds, names := make([]string, len(refs)), make([]string, len(refs)), make([]string, len(refs))
	for i, r := range refs {
		ns[i], kinds[i], names[i] = r.Namespace, r.Kind, r.Name
	}
	rows, err := s.db(ctx).Query(ctx, `
		SELECT d.namespace, d.kind, d.name, converge_phase(d), converge_blocks_dependents(d),
		       d.deletion_requested_at IS NOT NULL, d.status, d.spec
		FROM resources d JOIN unnest($1::text[], $2::text[], $3::text[]) AS x(ns, kind, name)
		  ON d.namespace = x.ns AND d.kind = x.kind AND d.name = x.name`, ns, kinds, names)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var e PlanEdge
		if err := rows.Scan(&e.Dependency.Namespace, &e.Dependency.Kind, &e.Dependency.Name, &e.Phase, &e.Blocks,
			&e.Deleting, &e.Status, &e.DepSpec); err != nil {
			return nil, err
		}
		out[e.Dependency] = e
	}
	return out, rows.Err()
}

// A plan is fenced by digests of what it read. KindDigest is a kind
// version's stored definition (manifest and policy, not its revision or
// times); ResourceFence covers what the plan of one resource document
// read: the resource, the kind versions it used, and for a composite its
// children (spec, desired spec, status, generation, orphan and deletion
// marks) and its edges with their flows and the statuses of their
// dependencies. The same statements compute them at plan time and at the
// fenced apply, so the two agree exactly when nothing changed.

// absent is the digest of something that does not exist.
const absent = "absent"

// KindDigests returns the digest of each kind version, absent for one
// that is not registered.
func (s *Store) KindDigests(ctx context.Context, keys []KindKey) (map[KindKey]string, error) {
	kinds, versions := make([]string, len(keys)), make([]int32, len(keys))
	for i, k := range keys {
		kinds[i], versions[i] = k.Kind, k.Version
	}
	rows, err := s.db(ctx).Query(ctx, `
		SELECT k.kind, k.kind_version, md5((to_jsonb(k) - 'revision' - 'created_at' - 'updated_at')::text)
		FROM kinds k JOIN unnest($1::text[], $2::int[]) AS u(kind, v) ON k.kind = u.kind AND k.kind_version = u.v`,
		kinds, versions)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make(map[KindKey]string, len(keys))
	for _, k := range keys {
		out[k] = absent
	}
	for rows.Next() {
		var k KindKey
		var d string
		if err := rows.Scan(&k.Kind, &k.Version, &d); err != nil {
			return nil, err
		}
		out[k] = d
	}
	return out, rows.Err()
}

// FenceParts are the digests of what the plan of one resource document
// read, by part, so that a refused apply can name what changed.
type FenceParts struct {
	Resource string `json:"resource"`
	Kinds    string `json:"kinds"`
	Children string `json:"children"`
	Edges    string `json:"edges"`
}

// ResourceFence returns the digests of what the plan of one resource
// document read (see above).
func (s *Store) ResourceFence(ctx context.Context, key ResourceKey, kinds []KindKey) (FenceParts, error) {
	names, versions := make([]string, len(kinds)), make([]int32, len(kinds))
	for i, k := range kinds {
		names[i], versions[i] = k.Kind, k.Version
	}
	var f FenceParts
	err := s.db(ctx).QueryRow(ctx, `
		WITH p AS (SELECT * FROM resources WHERE namespace = $1 AND kind = $2 AND name = $3)
		SELECT md5(coalesce((SELECT concat_ws(' ', p.kind_version, p.generation, md5(p.spec::text), md5(p.labels::text),
		             p.deletion_requested_at IS NOT NULL) FROM p), 'absent')),
		  md5(coalesce((SELECT string_agg(concat_ws(' ', k.kind, k.kind_version,
		             md5((to_jsonb(k) - 'revision' - 'created_at' - 'updated_at')::text)), E'\n' ORDER BY k.kind, k.kind_version)
		   FROM kinds k JOIN unnest($4::text[], $5::int[]) AS u(kind, v) ON k.kind = u.kind AND k.kind_version = u.v), '')),
		  md5(coalesce((SELECT string_agg(concat_ws(' ', c.kind, c.name, c.kind_version, c.generation, md5(c.spec::text),
		             md5(coalesce(c.desired_spec::text, '')), md5(c.status::text), c.orphaned_until IS NOT NULL,
		             c.deletion_requested_at IS NOT NULL), E'\n' ORDER BY c.kind, c.name)
		   FROM p JOIN resources c ON c.owner_id = p.id), '')),
		  md5(coalesce((SELECT string_agg(concat_ws(' ', t.kind, t.name, d.namespace, d.kind, d.name, md5(e.flows::text),
		             md5(d.status::text), converge_blocks_dependents(d)), E'\n' ORDER BY t.kind, t.name, d.namespace, d.kind, d.name)
		   FROM p JOIN edges e ON e.owner_id = p.id JOIN resources t ON t.id = e.dependent_id
		   JOIN resources d ON d.id = e.dependency_id), ''))`,
		key.Namespace, key.Kind, key.Name, names, versions).Scan(&f.Resource, &f.Kinds, &f.Children, &f.Edges)
	return f, err
}

// LockPlanReads takes share locks on what ResourceFence reads of one
// resource document: its kind versions, the resource, its children and
// the dependencies of its edges, kinds first and resources in id order
// (the order every writer takes them). Run in the fenced apply's own
// transaction (InOneTransaction) before ResourceFence, it keeps all of it
// as the fence saw it until the apply commits.
func (s *Store) LockPlanReads(ctx context.Context, key ResourceKey, kinds []KindKey) error {
	names, versions := make([]string, len(kinds)), make([]int32, len(kinds))
	for i, k := range kinds {
		names[i], versions[i] = k.Kind, k.Version
	}
	db := s.db(ctx)
	if _, err := db.Exec(ctx, `
		SELECT 1 FROM kinds k JOIN unnest($1::text[], $2::int[]) AS u(kind, v) ON k.kind = u.kind AND k.kind_version = u.v
		ORDER BY k.kind, k.kind_version FOR SHARE OF k`, names, versions); err != nil {
		return err
	}
	_, err := db.Exec(ctx, `
		WITH p AS (SELECT id FROM resources WHERE namespace = $1 AND kind = $2 AND name = $3)
		SELECT 1 FROM resources r WHERE r.id IN (
		    SELECT id FROM p
		    UNION SELECT c.id FROM p JOIN resources c ON c.owner_id = p.id
		    UNION SELECT e.dependency_id FROM p JOIN edges e ON e.owner_id = p.id)
		ORDER BY r.id FOR SHARE OF r`, key.Namespace, key.Kind, key.Name)
	return err
}

// SavePlan stores a plan's fence until expires. It runs on the pool: a
// plan is computed in a dry run, and its fence must outlive it.
func (s *Store) SavePlan(ctx context.Context, id string, fence json.RawMessage, expires time.Time) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM plans WHERE expires_at < now()`); err != nil {
		return err
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO plans (id, fence, expires_at) VALUES ($1, $2, $3)`, id, fence, expires)
	return err
}

// LoadPlan returns a stored, unexpired plan's fence; ErrNotFound when
// there is none.
func (s *Store) LoadPlan(ctx context.Context, id string) (json.RawMessage, error) {
	var fence json.RawMessage
	err := s.db(ctx).QueryRow(ctx, `SELECT fence FROM plans WHERE id = $1 AND expires_at > now()`, id).Scan(&fence)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	return fence, err
}
