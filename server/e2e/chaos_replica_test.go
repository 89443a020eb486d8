//go:build unix

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/devpg"
	"github.com/convergehq/converge/server/internal/pgtest"
)

const (
	// chaosReplicaDuration is TestChaosReplica's default fault phase:
	// faults 10–12 s apart from +0 s give exactly five within it, one of
	// each type of its rounds of five.
	chaosReplicaDuration = 50 * time.Second
	// chaosReadEvery paces the read-your-writes reader.
	chaosReadEvery = 50 * time.Millisecond
	// chaosWatchCatchUp bounds how long the watchers may take, once every
	// resource converged, to deliver what the change feed holds.
	chaosWatchCatchUp = 30 * time.Second
)

// TestChaosReplica is TestChaos with a read replica: the control replicas
// read through a hot standby of the test's PostgreSQL
// (--read-database-url), and the faults include restarting and killing
// the standby. Besides TestChaos's invariants it checks that the API's
// clients read their own writes (a read with the writer's token never
// shows an older generation than the write was acknowledged at), that a
// Watch on each control replica, whose pages go through the replica,
// delivered every change of the feed once and in order per resource, and
// that the replica served reads. docs/chaos.md describes it.
func TestChaosReplica(t *testing.T) {
	beginAlone(t)
	cfg, err := chaosConfigFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv(chaosDurationEnv) == "" {
		cfg.duration = chaosReplicaDuration
	}
	runChaos(t, cfg, true)
}

// startStandby starts a hot standby of the chaos cluster, waits until it
// replayed the migrated database, and returns the control replicas'
// flags that read through it.
func (c *chaosCluster) startStandby() []string {
	t := c.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), pgRestartTimeout)
	defer cancel()
	sb, err := devpg.StartStandby(ctx, c.pg, devpg.Options{InMemory: true, Settings: map[string]string{"max_connections": "200"}})
	if err != nil {
		t.Fatalf("starting the chaos standby: %v", err)
	}
	t.Cleanup(func() {
		if err := sb.Stop(); err != nil {
			t.Errorf("stopping the chaos standby: %v", err)
		}
	})
	c.standby = sb
	u, err := url.Parse(c.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	rep := &pgtest.Replicated{Primary: c.pg, Standby: sb, Name: name, PrimaryURL: c.dbURL, StandbyURL: sb.URL(name)}
	if err := rep.WaitReplayed(ctx, pgRestartTimeout); err != nil {
		t.Fatalf("the chaos standby: %v", err)
	}
	return []string{"--read-database-url", rep.StandbyURL}
}

// faultStandby restarts the standby, fast or after a SIGKILL; it resumes
// streaming from where it had replayed to.
func (c *chaosCluster) faultStandby(f plannedFault) {
	t := c.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), pgRestartTimeout)
	defer cancel()
	if f.kind == faultStandbyKill {
		if err := c.standby.Kill(); err != nil {
			t.Fatalf("fault %s: killing the standby: %v", f, err)
		}
	}
	if err := c.standby.Restart(ctx); err != nil {
		t.Fatalf("fault %s: restarting the standby: %v", f, err)
	}
}

// replicaReaders read through the control replicas while the chaos runs:
// a Watch on each, and a reader that reads back acknowledged writes with
// the token of the client that made them.
type replicaReaders struct {
	gen    *loadGen
	cancel context.CancelFunc
	done   sync.WaitGroup

	mu       sync.Mutex
	watched  []map[string][]int64 // per control: resource versions in delivery order, per resource
	watchErr []error
	reads    int
	readErrs int
	stale    []string // reads older than the reader's own acknowledged write
}

// startReplicaReaders opens the watches, returning once each is
// registered, and starts the reader.
func startReplicaReaders(t *testing.T, c *chaosCluster, gen *loadGen) *replicaReaders {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &replicaReaders{gen: gen, cancel: cancel}
	t.Cleanup(r.stop)
	registered := make(chan int, len(c.controls))
	for i, ctl := range c.controls {
		r.watched = append(r.watched, map[string][]int64{})
		r.watchErr = append(r.watchErr, nil)
		r.done.Add(1)
		go func() {
			defer r.done.Done()
			err := ctl.srv.api.Follow(ctx, &convergev1.WatchRequest{Kind: chaosKind}, func(resp *convergev1.WatchResponse) error {
				if resp.GetHeartbeat() && len(resp.GetChanges()) == 0 {
					registered <- i
					return nil
				}
				r.mu.Lock()
				defer r.mu.Unlock()
				for _, ch := range resp.GetChanges() {
					r.watched[i][ch.GetName()] = append(r.watched[i][ch.GetName()], ch.GetResourceVersion())
				}
				return nil
			})
			if ctx.Err() == nil {
				r.mu.Lock()
				r.watchErr[i] = fmt.Errorf("the Watch on control #%d ended: %v", i+1, err)
				r.mu.Unlock()
			}
		}()
	}
	deadline := time.After(readyTimeout)
	for range c.controls {
		select {
		case <-registered:
		case <-deadline:
			t.Fatalf("the chaos watches were not registered within %s", readyTimeout)
		}
	}
	r.done.Add(1)
	go func() {
		defer r.done.Done()
		r.readLoop(ctx)
	}()
	return r
}

func (r *replicaReaders) stop() {
	r.cancel()
	r.done.Wait()
}

// readLoop reads an acknowledged write back, every chaosReadEvery, through
// the client that was answered, until ctx ends.
func (r *replicaReaders) readLoop(ctx context.Context) {
	rng := rand.New(rand.NewPCG(1, 2))
	tick := time.NewTicker(chaosReadEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		g := r.gen
		g.mu.Lock()
		if len(g.names) == 0 {
			g.mu.Unlock()
			continue
		}
		name := g.names[rng.IntN(len(g.names))]
		want := g.acked[name]
		g.mu.Unlock()
		callCtx, cancel := context.WithTimeout(ctx, chaosCallTimeout)
		got, err := g.apis[want.api].GetResource(callCtx, &convergev1.GetResourceRequest{Kind: chaosKind, Name: name})
		cancel()
		r.mu.Lock()
		switch {
		case ctx.Err() != nil:
		case err != nil:
			r.readErrs++
		default:
			r.reads++
			if gen := got.GetResource().GetGeneration(); gen < want.generation {
				r.stale = append(r.stale, fmt.Sprintf("%s/%s read at generation %d at %s through the client acknowledged generation %d",
					chaosKind, name, gen, stamp(time.Now()), want.generation))
			}
		}
		r.mu.Unlock()
	}
}

// check stops the readers and checks what they saw against the change
// feed; it returns the lines it adds to the summary.
func (r *replicaReaders) check(t *testing.T, c *chaosCluster, pool *pgxpool.Pool) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	feed, total, err := readFeedVersions(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(chaosWatchCatchUp)
	for !r.caughtUp(total) && time.Now().Before(deadline) {
		time.Sleep(pollInterval)
	}
	r.stop()
	var b strings.Builder
	for i := range r.watched {
		if r.watchErr[i] != nil {
			t.Errorf("Watch complete: %v", r.watchErr[i])
		}
		for _, v := range watchGaps(feed, r.watched[i]) {
			t.Errorf("Watch complete (control #%d): %s", i+1, v)
		}
		fmt.Fprintf(&b, "watch on control #%d: %d changes delivered of %d in the feed\n", i+1, countVersions(r.watched[i]), total)
	}
	for _, s := range r.stale {
		t.Errorf("read your writes: %s", s)
	}
	fmt.Fprintf(&b, "read-your-writes reads %d (failed %d), older than the write %d\n", r.reads, r.readErrs, len(r.stale))
	served := map[string]float64{}
	for _, ctl := range c.controls {
		for k, v := range routedReads(t, ctl) {
			served[k] += v
		}
	}
	onReplica := 0.0
	for k, v := range served {
		if strings.HasPrefix(k, "replica/") {
			onReplica += v
		}
	}
	if onReplica == 0 {
		t.Errorf("the replica served no read since the control replicas last started: %v", served)
	}
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range served {
			if !yield(k) {
				return
			}
		}
	})
	b.WriteString("reads since each control replica last started, by source/reason:")
	for _, k := range keys {
		fmt.Fprintf(&b, " %s %.0f", k, served[k])
	}
	b.WriteString("\n")
	return b.String()
}

func (r *replicaReaders) caughtUp(total int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, w := range r.watched {
		if countVersions(w) < total {
			return false
		}
	}
	return true
}

func countVersions(w map[string][]int64) int {
	n := 0
	for _, vs := range w {
		n += len(vs)
	}
	return n
}

// readFeedVersions reads the chaos resources' change feed: each
// resource's versions, ascending, and how many rows there are.
func readFeedVersions(ctx context.Context, pool *pgxpool.Pool) (map[string][]int64, int, error) {
	rows, err := pool.Query(ctx, `SELECT name, resource_version FROM changes WHERE kind = $1 ORDER BY name, resource_version`, chaosKind)
	if err != nil {
		return nil, 0, fmt.Errorf("reading the chaos change feed: %w", err)
	}
	defer rows.Close()
	out := map[string][]int64{}
	n := 0
	for rows.Next() {
		var name string
		var v int64
		if err := rows.Scan(&name, &v); err != nil {
			return nil, 0, err
		}
		out[name] = append(out[name], v)
		n++
	}
	return out, n, rows.Err()
}

// watchGaps compares what a Watch delivered with the feed: every change
// once, each resource's in the order of its versions.
func watchGaps(feed, watched map[string][]int64) []string {
	var out []string
	for name, want := range feed {
		got := watched[name]
		if !slices.Equal(got, want) {
			out = append(out, fmt.Sprintf("%s/%s: the feed holds resource versions %v, the Watch delivered %v", chaosKind, name, clipVersions(want), clipVersions(got)))
		}
	}
	for name, got := range watched {
		if _, ok := feed[name]; !ok {
			out = append(out, fmt.Sprintf("%s/%s: the Watch delivered versions %v the feed does not hold", chaosKind, name, clipVersions(got)))
		}
	}
	slices.Sort(out)
	return out
}

func clipVersions(vs []int64) string {
	if len(vs) > 12 {
		return fmt.Sprintf("%v … (%d in all)", vs[:12], len(vs))
	}
	return fmt.Sprint(vs)
}

// routedReads scrapes converge_reads_total from a control replica's
// metrics endpoint, by "source/reason".
func routedReads(t *testing.T, r *replica) map[string]float64 {
	t.Helper()
	addr := ""
	for i, a := range r.extra {
		if a == "--metrics-listen" && i+1 < len(r.extra) {
			addr = r.extra[i+1]
		}
	}
	if addr == "" {
		t.Fatalf("%s has no --metrics-listen", r.srv.proc.name)
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("scraping %s: %v", r.srv.proc.name, err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "converge_reads_total{") {
			continue
		}
		labels, value, ok := strings.Cut(strings.TrimPrefix(line, "converge_reads_total{"), "} ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		out[label(labels, "source")+"/"+label(labels, "reason")] += v
	}
	return out
}

// label returns one label's value from a Prometheus label list.
func label(labels, name string) string {
	_, rest, ok := strings.Cut(labels, name+`="`)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, `"`)
	return v
}
