package app_test

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5"

	"github.com/convergehq/converge/sdk-go/client"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/sdk-go/gen/converge/v1/convergev1connect"
	"github.com/convergehq/converge/server/internal/app"
	"github.com/convergehq/converge/server/internal/pgtest"
)

// replicaServer starts a full server on a primary with a hot standby as
// its read replica.
func replicaServer(t *testing.T, maxLag, wait time.Duration) (*app.App, *pgtest.Replicated, string) {
	t.Helper()
	r := pgtest.NewReplicated(t)
	a := startWith(t, func(c *app.Config) {
		c.DatabaseURL, c.ReadDatabaseURL = r.PrimaryURL, r.StandbyURL
		c.ReadMaxLag, c.ReadWait = maxLag, wait
		c.MetricsListen = "127.0.0.1:0"
	})
	base := "http://" + a.Addr().String()
	// Until the replica has replayed past a position the primary had once
	// the server started, its staleness is unknown and reads stay off it.
	plain := convergev1connect.NewControlServiceClient(http.DefaultClient, base)
	waitFor(t, 30*time.Second, "a read on the replica", func() bool {
		_, err := plain.CountResources(t.Context(), &convergev1.CountResourcesRequest{})
		return err == nil && reads(t, a, "replica") > 0
	})
	return a, r, base
}

// reads sums converge_reads_total over the reasons of one source.
func reads(t *testing.T, a *app.App, source string) float64 {
	t.Helper()
	n := 0.0
	for series, v := range scrape(t, a) {
		if strings.HasPrefix(series, "converge_reads_total{") && strings.Contains(series, `source="`+source+`"`) {
			n += v
		}
	}
	return n
}

func waitFor(t *testing.T, within time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func standbyExec(t *testing.T, r *pgtest.Replicated, sql string) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), r.StandbyURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), sql); err != nil {
		t.Fatalf("%s on the standby: %v", sql, err)
	}
}

// restGet GETs url and returns the status and the read-your-writes token.
func replicaRESTGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get(client.ReadAfterHeader)
}

func greet(t *testing.T, ctl convergev1connect.ControlServiceClient, name string) {
	t.Helper()
	if _, err := ctl.ApplyResource(t.Context(), &convergev1.ApplyResourceRequest{Kind: "greeting", KindVersion: 1, Name: name,
		Spec: mustStruct(t, map[string]any{"name": name})}); err != nil {
		t.Fatalf("apply %s: %v", name, err)
	}
}

// Reads are served by the replica: with its replay paused, a read without
// a token does not see a fresh write, until the staleness bound passes; a
// read carrying the writer's token waits for the replica and then reads
// the primary; once replay resumes, the replica serves reads again.
func TestReplicaServesReadsWithinTheBound(t *testing.T) {
	const maxLag, wait = 4 * time.Second, time.Second
	a, r, base := replicaServer(t, maxLag, wait)
	writer := client.New(base)                                                   // keeps and sends tokens
	plain := convergev1connect.NewControlServiceClient(http.DefaultClient, base) // never sends one
	ctx := t.Context()
	applyGreeting(t, writer)
	greet(t, writer, "before")
	onReplica := reads(t, a, "replica")
	if _, err := writer.GetResource(ctx, &convergev1.GetResourceRequest{Kind: "greeting", Name: "before"}); err != nil {
		t.Fatalf("read right after the write, with its token: %v", err)
	}
	if n := reads(t, a, "replica"); n <= onReplica {
		t.Fatalf("the read after the write did not run on the replica (converge_reads_total %v → %v)", onReplica, n)
	}

	// Every routed read works on a standby: none writes, none touches an
	// UNLOGGED table, none fails over.
	onReplica = reads(t, a, "replica")
	k, n := "greeting", "before"
	calls := []struct {
		name string
		call func() error
	}{
		{"tree", func() error {
			_, err := plain.GetResourceTree(ctx, &convergev1.GetResourceTreeRequest{Kind: k, Name: n})
			return err
		}},
		{"graph", func() error {
			_, err := plain.GetResourceGraph(ctx, &convergev1.GetResourceGraphRequest{Kind: k, Name: n})
			return err
		}},
		{"explain", func() error {
			_, err := plain.ExplainResource(ctx, &convergev1.ExplainResourceRequest{Kind: k, Name: n})
			return err
		}},
		{"history", func() error {
			_, err := plain.GetResourceHistory(ctx, &convergev1.GetResourceHistoryRequest{Kind: k, Name: n})
			return err
		}},
		{"events", func() error {
			_, err := plain.ListEvents(ctx, &convergev1.ListEventsRequest{Kind: k, Name: n})
			return err
		}},
		{"operations", func() error {
			_, err := plain.ListOperations(ctx, &convergev1.ListOperationsRequest{Kind: k, Name: n})
			return err
		}},
		{"rollouts", func() error {
			_, err := plain.ListRollouts(ctx, &convergev1.ListRolloutsRequest{})
			return err
		}},
		{"count", func() error {
			_, err := plain.CountResources(ctx, &convergev1.CountResourcesRequest{Kind: k})
			return err
		}},
		{"get operation", func() error {
			_, err := plain.GetOperation(ctx, &convergev1.GetOperationRequest{Id: "nope"})
			if connect.CodeOf(err) == connect.CodeNotFound {
				return nil
			}
			return err
		}},
		{"get rollout", func() error {
			_, err := plain.GetRollout(ctx, &convergev1.GetRolloutRequest{RolloutId: 1})
			if connect.CodeOf(err) == connect.CodeNotFound {
				return nil
			}
			return err
		}},
	}
	for _, c := range calls {
		if err := c.call(); err != nil {
			t.Errorf("%s through the replica: %v", c.name, err)
		}
	}
	if got := reads(t, a, "replica") - onReplica; got < float64(len(calls)) {
		t.Errorf("%v of %d routed reads ran on the replica", got, len(calls))
	}
	if f := scrape(t, a)[`converge_reads_total{reason="failed",source="primary"}`]; f != 0 {
		t.Errorf("%v reads failed on the replica and ran again on the primary; want none", f)
	}

	// Task records are UNLOGGED, so no standby has them: they stay on the
	// primary, and reading them through the replica server works.
	if _, err := plain.ListTaskRecords(ctx, &convergev1.ListTaskRecordsRequest{Kind: "greeting", Name: "before"}); err != nil {
		t.Fatalf("task records through the replica server: %v", err)
	}

	standbyExec(t, r, `SELECT pg_wal_replay_pause()`)
	paused := time.Now()
	greet(t, writer, "during")
	_, err := plain.GetResource(ctx, &convergev1.GetResourceRequest{Kind: "greeting", Name: "during"})
	if time.Since(paused) < maxLag-time.Second && connect.CodeOf(err) != connect.CodeNotFound {
		t.Fatalf("tokenless read on the paused replica: %v; want NotFound (served by the replica, which has not replayed the write)", err)
	}
	rest, err := http.Get(base + "/api/v1/namespaces/default/resources/greeting/during")
	if err != nil {
		t.Fatal(err)
	}
	rest.Body.Close()
	if time.Since(paused) < maxLag-time.Second && rest.StatusCode != http.StatusNotFound {
		t.Fatalf("REST read on the paused replica: %d; want 404 (the UI's reads go to the replica too)", rest.StatusCode)
	}
	start := time.Now()
	if _, err := writer.GetResource(ctx, &convergev1.GetResourceRequest{Kind: "greeting", Name: "during"}); err != nil {
		t.Fatalf("read with the writer's token: %v; want the primary's answer", err)
	}
	if took := time.Since(start); took < wait-50*time.Millisecond {
		t.Errorf("the token's read took %s; want it to wait about --read-wait (%s) for the paused replica", took, wait)
	}
	if s := scrape(t, a); s[`converge_reads_total{reason="behind",source="primary"}`] < 1 {
		t.Errorf("no read counted as behind on the primary")
	}
	waitFor(t, maxLag+5*time.Second, "the lag to pass the bound", func() bool {
		return scrape(t, a)["converge_read_replica_lag_seconds"] > maxLag.Seconds()
	})
	if _, err := plain.GetResource(ctx, &convergev1.GetResourceRequest{Kind: "greeting", Name: "during"}); err != nil {
		t.Fatalf("tokenless read past the staleness bound: %v; want the primary's answer", err)
	}
	if code, tok := replicaRESTGet(t, base+"/api/v1/namespaces/default/resources/greeting/during"); code != http.StatusOK || tok == "" {
		t.Errorf("REST read the primary served: %d, token %q; want 200 with a %s token, so the next read cannot show older state",
			code, tok, client.ReadAfterHeader)
	}
	if s := scrape(t, a); s[`converge_reads_total{reason="lag",source="primary"}`] < 1 {
		t.Errorf("no read counted as lagging on the primary")
	}

	standbyExec(t, r, `SELECT pg_wal_replay_resume()`)
	waitFor(t, 10*time.Second, "the lag to fall", func() bool { return scrape(t, a)["converge_read_replica_lag_seconds"] < 0.5 })
	before := reads(t, a, "replica")
	if _, err := plain.ListResources(ctx, &convergev1.ListResourcesRequest{Kind: "greeting"}); err != nil {
		t.Fatal(err)
	}
	if code, tok := replicaRESTGet(t, base+"/api/v1/resources?kind=greeting"); code != http.StatusOK || tok != "" {
		t.Errorf("REST list the replica served: %d, token %q; want 200 without a token (only writes and primary reads carry one)", code, tok)
	}
	if after := reads(t, a, "replica"); after <= before {
		t.Errorf("after replay resumed, a list did not run on the replica (%v → %v)", before, after)
	}
	// The reads ran in the replica's own sessions.
	conn, err := pgx.Connect(ctx, r.StandbyURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var sessions int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, app.ReplicaApplicationName).Scan(&sessions); err != nil || sessions == 0 {
		t.Errorf("pg_stat_activity on the standby: %d %s sessions, %v; want some", sessions, app.ReplicaApplicationName, err)
	}
}

// Killing the replica costs no read an error: reads fall back to the
// primary, and return to the replica once it is back. A Watch open
// through all of it delivers every change, in commit order.
func TestReplicaKilledReadsFallBackAndWatchStaysComplete(t *testing.T) {
	a, r, base := replicaServer(t, 4*time.Second, 300*time.Millisecond)
	writer := client.New(base)
	plain := convergev1connect.NewControlServiceClient(http.DefaultClient, base)
	ctx := t.Context()
	applyGreeting(t, writer)

	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	stream, err := writer.Watch(watchCtx, &convergev1.WatchRequest{Kind: "greeting"})
	if err != nil {
		t.Fatal(err)
	}
	if !stream.Receive() {
		t.Fatalf("watch: no first message: %v", stream.Err())
	}
	seen := make(chan string, 1000)
	watchErr := make(chan error, 1)
	go func() {
		for stream.Receive() {
			for _, ch := range stream.Msg().GetChanges() {
				if ch.GetType() == "created" {
					seen <- ch.GetName()
				}
			}
		}
		watchErr <- stream.Err()
	}()

	const n = 30
	var names []string
	for i := range n {
		switch i {
		case 10:
			if err := r.Standby.Kill(); err != nil {
				t.Fatal(err)
			}
		case 20:
			if err := r.Standby.Restart(ctx); err != nil {
				t.Fatalf("restart the standby: %v", err)
			}
		}
		name := "g" + string(rune('a'+i/26)) + string(rune('a'+i%26))
		names = append(names, name)
		greet(t, writer, name)
		if _, err := writer.GetResource(ctx, &convergev1.GetResourceRequest{Kind: "greeting", Name: name}); err != nil {
			t.Fatalf("get %s (write %d): %v", name, i, err)
		}
		if _, err := plain.ListResources(ctx, &convergev1.ListResourcesRequest{Kind: "greeting"}); err != nil {
			t.Fatalf("list after write %d: %v", i, err)
		}
		if _, err := plain.CountResources(ctx, &convergev1.CountResourcesRequest{Kind: "greeting"}); err != nil {
			t.Fatalf("count after write %d: %v", i, err)
		}
	}
	s := scrape(t, a)
	if s[`converge_reads_total{reason="down",source="primary"}`]+s[`converge_reads_total{reason="failed",source="primary"}`] < 1 {
		t.Errorf("no read fell back to the primary while the replica was down")
	}
	before := reads(t, a, "replica")
	waitFor(t, 30*time.Second, "reads to return to the restarted replica", func() bool {
		_, err := plain.ListResources(ctx, &convergev1.ListResourcesRequest{Kind: "greeting"})
		if err != nil {
			t.Fatalf("list after the restart: %v", err)
		}
		return reads(t, a, "replica") > before
	})

	var got []string
	timeout := time.After(30 * time.Second)
	for len(got) < n {
		select {
		case name := <-seen:
			got = append(got, name)
		case err := <-watchErr:
			t.Fatalf("watch ended after %d of %d changes: %v", len(got), n, err)
		case <-timeout:
			t.Fatalf("watch delivered %d of %d creations: %v", len(got), n, got)
		}
	}
	if strings.Join(got, ",") != strings.Join(names, ",") {
		t.Fatalf("watch delivered creations in the order\n%v\nwant the order of the writes\n%v", got, names)
	}
}

// A replica that is down when the server starts does not stop it: reads
// go to the primary, counted as such.
func TestReplicaDownAtStart(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	a := startWith(t, func(c *app.Config) {
		c.ReadDatabaseURL = "postgres://postgres@" + closed + "/nothing?sslmode=disable"
		c.MetricsListen = "127.0.0.1:0"
	})
	plain := convergev1connect.NewControlServiceClient(http.DefaultClient, "http://"+a.Addr().String())
	if _, err := plain.CountResources(t.Context(), &convergev1.CountResourcesRequest{}); err != nil {
		t.Fatalf("a read with the replica down: %v", err)
	}
	s := scrape(t, a)
	if s["converge_read_replica_up"] != 0 || reads(t, a, "primary") < 1 || reads(t, a, "replica") != 0 {
		t.Errorf("replica up %v, primary reads %v, replica reads %v; want 0, ≥ 1, 0",
			s["converge_read_replica_up"], reads(t, a, "primary"), reads(t, a, "replica"))
	}
}
