package store

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// A dry run executes a write exactly as the real call would, every
// statement of it and every read after it, inside one transaction that is
// rolled back at the end. Rolling back is what makes "nothing written"
// hold for every write at once: no row, no event, no task, and no NOTIFY
// (PostgreSQL delivers notifications only on commit). ResourceKey sequences
// do move on, as they do for any rolled-back transaction.
//
// Every statement the Store runs goes through db (or relaxedDB), which
// answers the dry run's transaction when the context carries one; inTx
// then opens a savepoint in it, so a write that fails part-way is undone
// as it would be for real and the dry run can go on reading.
type dryRunKey struct{}

// querier is what a pool and a transaction have in common.
type querier interface {
	Begin(ctx context.Context) (pgx.Tx, error)
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
	CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error)
}

// BeginDryRun returns a context under which every Store call runs in one
// transaction, and the function that rolls it back (call it exactly once,
// when the dry run is over). The context must be used by one goroutine at
// a time: the transaction holds a single connection.
func (s *Store) BeginDryRun(ctx context.Context) (context.Context, func(), error) {
	if InDryRun(ctx) {
		return nil, nil, fmt.Errorf("a dry run is already under way in this context")
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, nil, err
	}
	end := func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }
	return context.WithValue(ctx, dryRunKey{}, tx), end, nil
}

// InDryRun reports whether ctx is a dry run's: writes under it are rolled
// back, so side effects outside the database (caches, wake-ups) must not
// follow them.
func InDryRun(ctx context.Context) bool {
	_, ok := ctx.Value(dryRunKey{}).(pgx.Tx)
	return ok
}

func (s *Store) db(ctx context.Context) querier {
	if tx := txOf(ctx); tx != nil {
		return tx
	}
	if tx, ok := ctx.Value(atomicKey{}).(pgx.Tx); ok {
		return tx
	}
	if p := readPool(ctx); p != nil {
		return p
	}
	return s.pool
}

func (s *Store) relaxedDB(ctx context.Context) querier {
	if tx := txOf(ctx); tx != nil {
		return tx
	}
	if tx, ok := ctx.Value(atomicKey{}).(pgx.Tx); ok {
		return tx
	}
	if p := readPool(ctx); p != nil {
		return p
	}
	return s.relaxed
}

// txOf is the transaction every statement under ctx runs in: a dry run's
// or InOneTransaction's; nil for none.
func txOf(ctx context.Context) pgx.Tx {
	if tx, ok := ctx.Value(dryRunKey{}).(pgx.Tx); ok {
		return tx
	}
	if tx, ok := ctx.Value(oneTxKey{}).(pgx.Tx); ok {
		return tx
	}
	return nil
}

type oneTxKey struct{}

// InOneTransaction runs f with a context under which every Store call
// runs in one transaction, committed when f returns nil and rolled back
// otherwise. Under a dry run it is the dry run's. Side effects outside the
// database (caches, wake-ups) wait for the commit: see Uncommitted.
func (s *Store) InOneTransaction(ctx context.Context, f func(context.Context) error) error {
	if txOf(ctx) != nil {
		return f(ctx)
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := f(context.WithValue(ctx, oneTxKey{}, tx)); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// Uncommitted reports whether writes under ctx are not committed when the
// call that makes them returns (a dry run, or InOneTransaction): caches
// and wake-ups must not follow them yet.
func Uncommitted(ctx context.Context) bool { return txOf(ctx) != nil }

// ResourceState is what a write can change about one resource.
type ResourceState struct {
	ID             int64
	Namespace      string
	Kind           string
	Name           string
	KindVersion    int32
	Generation     int64
	Phase          string
	Spec           json.RawMessage
	Labels         map[string]string
	Deleting       bool
	Quarantined    bool
	ProviderConfig string
	DeletionPolicy string
	// Observed: its management policy is observe (deleting it forgets it).
	Observed bool
}

// stateColumns are ResourceState's columns of resources r, in dest order.
const stateColumns = `r.id, r.namespace, r.kind, r.name, r.kind_version, r.generation, converge_phase(r), r.spec, r.labels,
	r.deletion_requested_at IS NOT NULL, r.quarantined, r.provider_config, r.deletion_policy, converge_observed(r)`

func (st *ResourceState) dest() []any {
	return []any{&st.ID, &st.Namespace, &st.Kind, &st.Name, &st.KindVersion, &st.Generation, &st.Phase,
		&st.Spec, &st.Labels, &st.Deleting, &st.Quarantined, &st.ProviderConfig, &st.DeletionPolicy, &st.Observed}
}

// ResourceStates reads the current state of the named resources that
// exist, keyed by identity.
func (s *Store) ResourceStates(ctx context.Context, ids []ResourceKey) (map[ResourceKey]ResourceState, error) {
	ns, kind, name := make([]string, len(ids)), make([]string, len(ids)), make([]string, len(ids))
	for i, id := range ids {
		ns[i], kind[i], name[i] = id.Namespace, id.Kind, id.Name
	}
	rows, err := s.db(ctx).Query(ctx, `
		SELECT `+stateColumns+`
		FROM resources r JOIN unnest($1::text[], $2::text[], $3::text[]) AS k(ns, kind, name)
		  ON r.namespace = k.ns AND r.kind = k.kind AND r.name = k.name`, ns, kind, name)
	if err != nil {
		return nil, err
	}
	out := map[ResourceKey]ResourceState{}
	for rows.Next() {
		var st ResourceState
		if err := rows.Scan(st.dest()...); err != nil {
			rows.Close()
			return nil, err
		}
		out[ResourceKey{st.Namespace, st.Kind, st.Name}] = st
	}
	return out, rows.Err()
}

// TeardownStep is one resource of a deletion, with the wave in which its
// teardown can start (1 first).
type TeardownStep struct {
	ResourceState
	Wave int
}

// TeardownOrder lists the deleting resources reachable from root through
// ownership and dependency edges (the set a deletion of root marked), in
// the order teardown reaches them: a resource's wave comes after those of
// what must go before it (converge_goes_first, the rule Teardown applies).
func (s *Store) TeardownOrder(ctx context.Context, root ResourceKey) ([]TeardownStep, error) {
	rows, err := s.db(ctx).Query(ctx, `
		WITH RECURSIVE `+doomedCTE(`SELECT id FROM resources WHERE namespace = $1 AND kind = $2 AND name = $3`)+`
		SELECT `+stateColumns+`, ARRAY(SELECT converge_goes_first(r.id))
		FROM resources r JOIN doomed d ON d.id = r.id
		WHERE r.deletion_requested_at IS NOT NULL
		ORDER BY r.id`, root.Namespace, root.Kind, root.Name)
	if err != nil {
		return nil, err
	}
	var steps []TeardownStep
	first := map[int64][]int64{}
	for rows.Next() {
		var st TeardownStep
		var before []int64
		if err := rows.Scan(append(st.dest(), &before)...); err != nil {
			rows.Close()
			return nil, err
		}
		first[st.ID] = before
		steps = append(steps, st)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	assignWaves(steps, first)
	sort.SliceStable(steps, func(a, b int) bool { return steps[a].Wave < steps[b].Wave })
	return steps, nil
}

// assignWaves gives each step the wave after the latest of the steps
// that must go before it (first, by id); those outside the set are gone.
func assignWaves(steps []TeardownStep, first map[int64][]int64) {
	index := make(map[int64]int, len(steps))
	for i, st := range steps {
		index[st.ID] = i
	}
	var wave func(i int, visiting map[int]bool) int
	wave = func(i int, visiting map[int]bool) int {
		if steps[i].Wave > 0 {
			return steps[i].Wave
		}
		if visiting[i] {
			return 1 // a cycle cannot be declared; do not loop on one
		}
		visiting[i] = true
		w := 1
		for _, id := range first[steps[i].ID] {
			if j, ok := index[id]; ok {
				w = max(w, wave(j, visiting)+1)
			}
		}
		delete(visiting, i)
		steps[i].Wave = w
		return w
	}
	for i := range steps {
		wave(i, map[int]bool{})
	}
}
