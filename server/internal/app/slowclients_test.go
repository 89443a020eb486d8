package app_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/convergehq/converge/server/internal/app"
)

// latencies times n ordinary API requests, one after another.
func latencies(t *testing.T, base string, n int) []time.Duration {
	t.Helper()
	out := make([]time.Duration, 0, n)
	for range n {
		start := time.Now()
		res, err := http.Get(base + "/api/v1/kinds")
		if err != nil {
			t.Fatalf("an ordinary request: %v", err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("an ordinary request: status %d", res.StatusCode)
		}
		out = append(out, time.Since(start))
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// TestSlowClientsHoldNothing holds 500 connections open that send their
// headers slowly or a body that never comes, and shows ordinary requests
// still answer in their usual time, and the slow ones are closed by the
// header and body deadlines.
func TestSlowClientsHoldNothing(t *testing.T) {
	const (
		slow     = 500
		deadline = time.Second
	)
	base, addr, ctl := serverWith(t, func(c *app.Config) {
		c.Clients.HeaderTimeout, c.Clients.BodyTimeout = deadline, deadline
	})
	applyGreeting(t, ctl)
	before := latencies(t, base, 30)

	conns := make([]net.Conn, 0, slow)
	opened := time.Now()
	for i := range slow {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("opening slow connection %d: %v", i, err)
		}
		t.Cleanup(func() { c.Close() })
		if i%2 == 0 { // headers that stop halfway
			fmt.Fprintf(c, "POST /api/v1/resources HTTP/1.1\r\nHost: converge.test\r\n")
		} else { // headers, then a body that never comes
			fmt.Fprintf(c, "POST /api/v1/resources HTTP/1.1\r\nHost: converge.test\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n")
		}
		conns = append(conns, c)
	}
	during := latencies(t, base, 30)

	// Every slow connection is closed by the server (the body ones after a
	// 408) within the deadline and a margin.
	var wg sync.WaitGroup
	errs := make(chan string, slow)
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.SetReadDeadline(opened.Add(deadline + 5*time.Second))
			br := bufio.NewReader(c)
			if i%2 == 1 {
				res, err := http.ReadResponse(br, nil)
				if err != nil {
					errs <- fmt.Sprintf("body connection %d: no 408: %v", i, err)
					return
				}
				body, _ := io.ReadAll(res.Body)
				if res.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(body), "did not arrive") {
					errs <- fmt.Sprintf("body connection %d: %d %s, want 408 saying the body did not arrive", i, res.StatusCode, body)
					return
				}
			}
			if _, err := io.Copy(io.Discard, br); err != nil {
				errs <- fmt.Sprintf("connection %d: not closed by the server: %v", i, err)
			}
		}()
	}
	wg.Wait()
	closedWithin := time.Since(opened)
	close(errs)
	n := 0
	for e := range errs {
		if n++; n <= 5 {
			t.Error(e)
		}
	}
	if n > 0 {
		t.Fatalf("%d of %d slow connections were not cut off as they should be", n, slow)
	}
	med := func(d []time.Duration) time.Duration { return d[len(d)/2] }
	t.Logf("ordinary requests: median %s, max %s before; median %s, max %s with %d slow connections open; all slow ones closed %s after opening",
		med(before), before[len(before)-1], med(during), during[len(during)-1], slow, closedWithin.Round(time.Millisecond))
	if limit := 3*med(before) + 20*time.Millisecond; med(during) > limit {
		t.Errorf("with %d slow connections open, ordinary requests took %s (median), over %s: 3x their usual %s plus 20ms",
			slow, med(during), limit, med(before))
	}
}
