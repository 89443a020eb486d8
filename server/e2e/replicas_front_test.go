//go:build unix

package e2e

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// frontDialTimeout bounds one attempt to reach a broker behind the front.
const frontDialTimeout = time.Second

// front is a TCP load balancer over the broker replicas, as a Kubernetes
// Service would be: each connection goes to the next broker, in turn, that
// accepts it. The Go SDK dials one URL and redials it after a lost stream,
// so a worker pointed at the front reaches a live broker again when its
// own broker dies, with no restart and no list of brokers in the worker.
type front struct {
	ln  net.Listener
	url string

	mu     sync.Mutex
	addrs  []string
	next   int
	routed map[string]int // connections handed to each broker address
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// startFront listens on a free loopback port and forwards to addrs; it
// stops, closing every connection, when the test ends.
func startFront(t *testing.T, addrs []string) *front {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("front: listen: %v", err)
	}
	f := &front{ln: ln, url: "http://" + ln.Addr().String(), addrs: addrs,
		routed: map[string]int{}, conns: map[net.Conn]struct{}{}}
	f.wg.Add(1)
	go f.accept()
	t.Cleanup(f.close)
	return f
}

func (f *front) accept() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return // closed
		}
		f.wg.Add(1)
		go f.serve(c)
	}
}

// serve pipes c to a broker until either side closes.
func (f *front) serve(c net.Conn) {
	defer f.wg.Done()
	up := f.dial()
	if up == nil || !f.track(c, up) {
		c.Close()
		if up != nil {
			up.Close()
		}
		return
	}
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(up, c)
	go pipe(c, up)
	<-done
	// One side ended (a killed broker's socket resets): end the other, so
	// the worker sees its stream break and redials.
	c.Close()
	up.Close()
	<-done
	f.untrack(c, up)
}

// dial connects to the first broker, starting from the next in turn, that
// accepts; nil if none does.
func (f *front) dial() net.Conn {
	f.mu.Lock()
	start := f.next
	f.next = (f.next + 1) % len(f.addrs)
	f.mu.Unlock()
	for i := range f.addrs {
		addr := f.addrs[(start+i)%len(f.addrs)]
		up, err := net.DialTimeout("tcp", addr, frontDialTimeout)
		if err != nil {
			continue
		}
		f.mu.Lock()
		f.routed[addr]++
		f.mu.Unlock()
		return up
	}
	return nil
}

// track records a live pair so close can end it; false once closed.
func (f *front) track(c, up net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	f.conns[c], f.conns[up] = struct{}{}, struct{}{}
	return true
}

func (f *front) untrack(c, up net.Conn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.conns, c)
	delete(f.conns, up)
}

// routedTo reports how many connections went to addr so far.
func (f *front) routedTo(addr string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.routed[addr]
}

func (f *front) close() {
	f.ln.Close()
	f.mu.Lock()
	f.closed = true
	for c := range f.conns {
		c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}
