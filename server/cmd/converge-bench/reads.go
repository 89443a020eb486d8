package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/sdk-go/gen/converge/v1/convergev1connect"
	"github.com/convergehq/converge/server/internal/devpg"
)

// Reads: get and list throughput of the API at rest, through a control
// replica reading the primary and, in the same run on the same data, one
// reading a hot standby (serve --read-database-url). Both read the same
// N Ready leaves; the order alternates by run so neither always goes first
// on a warmer cache. Clients send no read-your-writes token, as a UI or a
// dashboard polling does.

type readMeasure struct {
	getRate, listRate float64 // calls per second
	pgCPU, standbyCPU float64 // CPU seconds per second of the window, primary and standby clusters
}

type readsResult struct {
	n                int
	primary, replica readMeasure
	// replicaShare is the share of the replica server's reads the standby
	// served (converge_reads_total).
	replicaShare float64
}

func runReads(ctx context.Context, o options, cluster *devpg.Cluster, run int) (readsResult, error) {
	res := readsResult{n: o.readResources}
	st, err := startStack(ctx, o, cluster, fmt.Sprintf("reads_%d", run), o.workerBin,
		"-kinds", benchKind+":1:reconcile", "-capacity", strconv.Itoa(o.capacity))
	if err != nil {
		return res, err
	}
	defer st.close()
	if _, err := st.client.ApplyKind(ctx, &convergev1.ApplyKindRequest{Manifest: benchManifest()}); err != nil {
		return res, fmt.Errorf("applying the bench kind: %w", err)
	}
	if err := submitRange(ctx, st.client, o, 0, o.readResources); err != nil {
		return res, fmt.Errorf("reads: applying leaves: %w", err)
	}
	if err := waitReady(ctx, st.pool, o.readResources, time.Hour); err != nil {
		return res, fmt.Errorf("reads: %w", err)
	}
	logf("reads: %d Ready; starting a hot standby", o.readResources)
	standby, err := devpg.StartStandby(ctx, cluster, devpg.Options{Durable: o.durable, Settings: pgProfile(o)})
	if err != nil {
		return res, fmt.Errorf("reads: %w", err)
	}
	defer standby.Stop()
	port, err := freePort()
	if err != nil {
		return res, err
	}
	mport, err := freePort()
	if err != nil {
		return res, err
	}
	addr, metricsAddr := "127.0.0.1:"+strconv.Itoa(port), "127.0.0.1:"+strconv.Itoa(mport)
	rp, err := start("converge-read", st.logDir, o.convergeBin, "serve", "--role", "control", "--migrate=false",
		"--database-url", cluster.URL(st.db), "--read-database-url", standby.URL(st.db),
		"--listen", addr, "--metrics-listen", metricsAddr, "--log-level", "warn")
	if err != nil {
		return res, err
	}
	defer rp.stop()
	if err := waitHTTP(ctx, "http://"+addr+"/readyz", rp); err != nil {
		return res, err
	}
	replicaURL := "http://" + addr
	primaryURL := st.apiURL
	measure := func(base string) (readMeasure, error) {
		return measureReads(ctx, o, base, cluster, standby)
	}
	first, second := &res.primary, &res.replica
	firstURL, secondURL := primaryURL, replicaURL
	if run%2 == 0 {
		first, second, firstURL, secondURL = second, first, secondURL, firstURL
	}
	if *first, err = measure(firstURL); err != nil {
		return res, err
	}
	if *second, err = measure(secondURL); err != nil {
		return res, err
	}
	res.replicaShare, err = replicaShare("http://" + metricsAddr + "/metrics")
	return res, err
}

// measureReads runs o.readClients clients against base for o.readWindow
// doing GetResource of random leaves, then as long doing ListResources
// (a page of 100 of the kind).
func measureReads(ctx context.Context, o options, base string, cluster, standby *devpg.Cluster) (readMeasure, error) {
	var m readMeasure
	ctl := convergev1connect.NewControlServiceClient(http.DefaultClient, base)
	// Warm up: the replica server's first reads wait for its sampler.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := ctl.CountResources(ctx, &convergev1.CountResourcesRequest{Kind: benchKind}); err == nil {
			break
		}
	}
	pg0, sb0, t0 := postgresCPU(filepath.Join(cluster.Dir(), "data")), postgresCPU(filepath.Join(standby.Dir(), "data")), time.Now()
	get := func(ctx context.Context) error {
		name := fmt.Sprintf("leaf-%07d", rand.IntN(max(o.readResources, 1)))
		_, err := ctl.GetResource(ctx, &convergev1.GetResourceRequest{Namespace: "default", Kind: benchKind, Name: name})
		return err
	}
	list := func(ctx context.Context) error {
		_, err := ctl.ListResources(ctx, &convergev1.ListResourcesRequest{Namespace: "default", Kind: benchKind, PageSize: 100})
		return err
	}
	var err error
	if m.getRate, err = hammer(ctx, o.readClients, o.readWindow, get); err != nil {
		return m, fmt.Errorf("reads: GetResource on %s: %w", base, err)
	}
	if m.listRate, err = hammer(ctx, o.readClients, o.readWindow, list); err != nil {
		return m, fmt.Errorf("reads: ListResources on %s: %w", base, err)
	}
	secs := time.Since(t0).Seconds()
	m.pgCPU = (postgresCPU(filepath.Join(cluster.Dir(), "data")) - pg0) / secs
	m.standbyCPU = (postgresCPU(filepath.Join(standby.Dir(), "data")) - sb0) / secs
	return m, nil
}

// hammer runs call from clients goroutines for window and returns the
// completed calls per second; the first error stops it. Calls carry no
// deadline of the window's: one cut short by it would count as an error.
func hammer(ctx context.Context, clients int, window time.Duration, call func(context.Context) error) (float64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var done atomic.Int64
	var first error
	var once sync.Once
	var wg sync.WaitGroup
	start := time.Now()
	end := start.Add(window)
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil && time.Now().Before(end) {
				if err := call(ctx); err != nil {
					once.Do(func() { first = err; cancel() })
					return
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	return float64(done.Load()) / time.Since(start).Seconds(), first
}

// replicaShare scrapes converge_reads_total and returns the replica's share.
func replicaShare(url string) (float64, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	var replica, total float64
	for line := range strings.SplitSeq(string(body), "\n") {
		if !strings.HasPrefix(line, "converge_reads_total{") {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			continue
		}
		total += v
		if strings.Contains(line, `source="replica"`) {
			replica += v
		}
	}
	if total == 0 {
		return 0, nil
	}
	return replica / total, nil
}

func reportReads(w io.Writer, o options, runs []readsResult) {
	if len(runs) == 0 {
		return
	}
	fmt.Fprintf(w, "\n### Reads: one primary, and a hot standby (--read-database-url)\n\n")
	fmt.Fprintf(w, "%d Ready leaves; %d clients for %s per figure, without read-your-writes tokens; "+
		"GetResource of a random leaf, ListResources of a page of 100. Primary and standby on this machine.\n\n",
		runs[0].n, o.readClients, o.readWindow)
	fmt.Fprintf(w, "| run | get/s primary | get/s replica | ratio | list/s primary | list/s replica | ratio | primary PG CPU (primary-only → with replica) | standby PG CPU | reads on the standby |\n")
	fmt.Fprintf(w, "|---|---|---|---|---|---|---|---|---|---|\n")
	for i, r := range runs {
		fmt.Fprintf(w, "| %d | %.0f | %.0f | %.2f× | %.0f | %.0f | %.2f× | %.2f → %.2f cores | %.2f cores | %.1f%% |\n", i+1,
			r.primary.getRate, r.replica.getRate, r.replica.getRate/r.primary.getRate,
			r.primary.listRate, r.replica.listRate, r.replica.listRate/r.primary.listRate,
			r.primary.pgCPU, r.replica.pgCPU, r.replica.standbyCPU, 100*r.replicaShare)
	}
}
