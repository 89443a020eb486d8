package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/protobuf/types/known/structpb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/conctl/document"
	"github.com/convergehq/converge/server/internal/devpg"
)

// compositeResult holds the W2, W3 and W4 figures of one run.
type compositeResult struct {
	// W2: root submit → root Ready, and last child Ready → root Ready,
	// per fan-out size.
	fanoutReady  map[int][]time.Duration
	fanoutRollup map[int][]time.Duration
	// W3: root submit → root Ready, and each hop (link i-1 Ready → link i Ready).
	chainReady []time.Duration
	chainHops  []time.Duration
	// W4: root submit → root Ready, and resources per second.
	zoneReady time.Duration
	zoneRate  float64
}

func runComposites(ctx context.Context, o options, cluster *devpg.Cluster, run int) (compositeResult, error) {
	res := compositeResult{fanoutReady: map[int][]time.Duration{}, fanoutRollup: map[int][]time.Duration{}}
	st, err := startCompositeStack(ctx, o, cluster, fmt.Sprintf("composite_%d", run))
	if err != nil {
		return res, err
	}
	defer st.close()
	for _, size := range []struct{ n, reps int }{{1000, o.fanoutReps}, {10000, max(o.fanoutReps/3, 1)}} {
		for i := 0; i < size.reps; i++ {
			name := fmt.Sprintf("fan-%d-%d", size.n, i)
			t, err := measureFanout(ctx, st, name, size.n, 5*time.Minute)
			if err != nil {
				return res, fmt.Errorf("W2 %s: %w", name, err)
			}
			res.fanoutReady[size.n] = append(res.fanoutReady[size.n], t.ready)
			res.fanoutRollup[size.n] = append(res.fanoutRollup[size.n], t.rollup)
		}
	}
	for i := 0; i < o.chainReps; i++ {
		name := fmt.Sprintf("chain-%d", i)
		ready, hops, err := measureChain(ctx, st, name, 10)
		if err != nil {
			return res, fmt.Errorf("W3 %s: %w", name, err)
		}
		res.chainReady = append(res.chainReady, ready)
		res.chainHops = append(res.chainHops, hops...)
	}
	return res, nil
}

// runZone is W4: a landing zone of 1 → 1,000 accounts → 1 VPC each → 1
// route each (3,001 resources), served by the landing-zone example worker.
func runZone(ctx context.Context, o options, cluster *devpg.Cluster, run int, zoneBin string, res *compositeResult) error {
	st, err := startStack(ctx, o, cluster, fmt.Sprintf("zone_%d", run), zoneBin, "-capacity", strconv.Itoa(o.capacity))
	if err != nil {
		return err
	}
	defer st.close()
	docs, err := document.Read([]string{filepath.Join("sdk-go", "examples", "landingzone", "kinds.yaml")}, nil)
	if err != nil {
		return err
	}
	for _, d := range docs {
		if m, ok := d.Message.(*convergev1.KindManifest); ok {
			if _, err := st.client.ApplyKind(ctx, &convergev1.ApplyKindRequest{Manifest: m}); err != nil {
				return fmt.Errorf("applying %s: %w", m.GetKind(), err)
			}
		}
	}
	if _, err := st.pool.Exec(ctx, `SELECT pg_stat_statements_reset()`); err != nil {
		return err
	}
	defer profileWhile(o, st.db)()
	spec, _ := structpb.NewStruct(map[string]any{"prefix": "w4", "accounts": 1000})
	if _, err := st.client.ApplyResource(ctx, &convergev1.ApplyResourceRequest{Kind: "landingzone", KindVersion: 1, Name: "w4", Spec: spec}); err != nil {
		return err
	}
	if err := waitPhase(ctx, st.pool, "landingzone", "w4", 10*time.Minute); err != nil {
		return fmt.Errorf("%w (worker log: %s)", err, st.worker.tail())
	}
	created, ready, err := createdReady(ctx, st.pool, "landingzone", "w4")
	if err != nil {
		return err
	}
	res.zoneReady = ready.Sub(created)
	res.zoneRate = 3001 / res.zoneReady.Seconds()
	if o.top > 0 {
		printTop(ctx, st.pool, o.top)
		printZoneWaves(ctx, st.pool, created, "landingzone", "w4")
		printZoneStages(ctx, st.pool, "landingzone", "w4")
	}
	return nil
}

// fanoutTimes is one fan-out's timeline from database timestamps: root
// submit → first child Ready (the compose and the children's queueing
// come before it), → root Ready, and last child Ready → root Ready (the
// rollup).
type fanoutTimes struct {
	firstChild, ready, rollup time.Duration
}

// measureFanout applies a bench.fanout of n leaves and waits up to limit
// for it to be Ready.
func measureFanout(ctx context.Context, st *stack, name string, n int, limit time.Duration) (fanoutTimes, error) {
	spec, _ := structpb.NewStruct(map[string]any{"n": n})
	if _, err := st.client.ApplyResource(ctx, &convergev1.ApplyResourceRequest{Kind: fanoutKind, KindVersion: 1, Name: name, Spec: spec}); err != nil {
		return fanoutTimes{}, err
	}
	if err := waitPhase(ctx, st.pool, fanoutKind, name, limit); err != nil {
		return fanoutTimes{}, err
	}
	created, rootReady, err := createdReady(ctx, st.pool, fanoutKind, name)
	if err != nil {
		return fanoutTimes{}, err
	}
	var firstChild, lastChild time.Time
	err = st.pool.QueryRow(ctx, `
		SELECT min(c.at), max(c.at) FROM changes c JOIN resources r ON r.id = c.resource_id
		JOIN resources p ON p.id = r.owner_id
		WHERE p.kind = $1 AND p.name = $2 AND c.phase = 'Ready'`, fanoutKind, name).Scan(&firstChild, &lastChild)
	if err != nil {
		return fanoutTimes{}, err
	}
	return fanoutTimes{firstChild: firstChild.Sub(created), ready: rootReady.Sub(created), rollup: rootReady.Sub(lastChild)}, nil
}

func measureChain(ctx context.Context, st *stack, name string, depth int) (time.Duration, []time.Duration, error) {
	spec, _ := structpb.NewStruct(map[string]any{"depth": depth})
	if _, err := st.client.ApplyResource(ctx, &convergev1.ApplyResourceRequest{Kind: chainKind, KindVersion: 1, Name: name, Spec: spec}); err != nil {
		return 0, nil, err
	}
	if err := waitPhase(ctx, st.pool, chainKind, name, 5*time.Minute); err != nil {
		return 0, nil, err
	}
	created, ready, err := createdReady(ctx, st.pool, chainKind, name)
	if err != nil {
		return 0, nil, err
	}
	rows, err := st.pool.Query(ctx, `
		SELECT r.name, min(c.at) FROM changes c JOIN resources r ON r.id = c.resource_id
		JOIN resources p ON p.id = r.owner_id
		WHERE p.kind = $1 AND p.name = $2 AND c.phase = 'Ready'
		GROUP BY r.name ORDER BY r.name`, chainKind, name)
	if err != nil {
		return 0, nil, err
	}
	defer rows.Close()
	var times []time.Time
	for rows.Next() {
		var n string
		var at time.Time
		if err := rows.Scan(&n, &at); err != nil {
			return 0, nil, err
		}
		times = append(times, at)
	}
	if len(times) != depth {
		return 0, nil, fmt.Errorf("%d of %d links became Ready", len(times), depth)
	}
	var hops []time.Duration
	for i := 1; i < len(times); i++ {
		hops = append(hops, times[i].Sub(times[i-1]))
	}
	return ready.Sub(created), hops, nil
}

// createdReady returns when a resource was created and when it first
// became Ready, as the database stamped them.
func createdReady(ctx context.Context, pool *pgxpool.Pool, kind, name string) (created, ready time.Time, err error) {
	err = pool.QueryRow(ctx, `
		SELECT min(at) FILTER (WHERE type = 'created'), min(at) FILTER (WHERE phase = 'Ready')
		FROM changes WHERE kind = $1 AND name = $2`, kind, name).Scan(&created, &ready)
	return created, ready, err
}

func waitPhase(ctx context.Context, pool *pgxpool.Pool, kind, name string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		var phase, msg string
		err := pool.QueryRow(ctx, `SELECT converge_phase(r), coalesce(r.failure_message, '') FROM resources r WHERE r.namespace = 'default' AND r.kind = $1 AND r.name = $2`,
			kind, name).Scan(&phase, &msg)
		if err == nil && phase == "Ready" {
			return nil
		}
		if err == nil && phase == "Failed" {
			return fmt.Errorf("%s/%s failed: %s", kind, name, msg)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s/%s not Ready after %s (phase %s)", kind, name, limit, phase)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// startCompositeStack starts a stack whose worker is this program's
// (`converge-bench worker`, serving every bench kind), applies the bench
// kinds and brings one leaf to Ready, which proves the worker is in.
func startCompositeStack(ctx context.Context, o options, cluster *devpg.Cluster, db string) (*stack, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	st, err := startStack(ctx, o, cluster, db, self, "worker", "-capacity", strconv.Itoa(o.capacity))
	if err != nil {
		return nil, err
	}
	for _, m := range compositeManifests() {
		if _, err := st.client.ApplyKind(ctx, &convergev1.ApplyKindRequest{Manifest: m}); err != nil {
			st.close()
			return nil, fmt.Errorf("applying %s: %w", m.GetKind(), err)
		}
	}
	if err := applyAndWait(ctx, st.client, "warmup"); err != nil {
		st.close()
		return nil, fmt.Errorf("warm-up leaf: %w (worker log: %s)", err, st.worker.tail())
	}
	return st, nil
}

func compositeManifests() []*convergev1.KindManifest {
	obj := func(props map[string]any) *structpb.Struct {
		s, _ := structpb.NewStruct(map[string]any{"type": "object", "properties": props})
		return s
	}
	integer := map[string]any{"type": "integer"}
	return []*convergev1.KindManifest{
		benchManifest(),
		{Kind: fanoutKind, KindVersion: 1, Description: "n no-op leaves", Owner: "bench",
			SpecSchema: obj(map[string]any{"n": integer}), StatusSchema: obj(map[string]any{"children": integer}),
			Reactions: []*convergev1.Reaction{{Name: "compose", Trigger: "specChange", Emits: []string{"children", "status"}}}},
		{Kind: chainKind, KindVersion: 1, Description: "a chain of links, each fed by the previous one", Owner: "bench",
			SpecSchema: obj(map[string]any{"depth": integer}), StatusSchema: obj(map[string]any{"depth": integer}),
			Reactions: []*convergev1.Reaction{{Name: "compose", Trigger: "specChange", Emits: []string{"children", "edges", "status"}}}},
		{Kind: linkKind, KindVersion: 1, Description: "one link of a chain", Owner: "bench",
			SpecSchema: obj(map[string]any{"index": integer, "upstream": integer}), StatusSchema: obj(map[string]any{"value": integer}),
			Reactions: []*convergev1.Reaction{{Name: "reconcile", Trigger: "specChange", Emits: []string{"status"}}}},
	}
}

// percentile returns the p-th percentile (0..1) of ds, nearest rank.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(p*float64(len(s))+0.999999) - 1
	return s[min(max(i, 0), len(s)-1)]
}
