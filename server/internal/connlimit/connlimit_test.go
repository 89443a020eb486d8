package connlimit_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/convergehq/converge/server/internal/connlimit"
	"github.com/convergehq/converge/server/internal/testkit"
)

// serve accepts through a limited listener and holds every connection
// open until the test ends.
func serve(t *testing.T, l connlimit.Limits) (*connlimit.Listener, string) {
	t.Helper()
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := connlimit.Wrap(raw, l)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(io.Discard, c); c.Close() }()
		}
	}()
	return ln, raw.Addr().String()
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// refusal reads the refusal a connection over a cap gets.
func refusal(t *testing.T, c net.Conn) (int, string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no refusal: %v", err)
	}
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(body)
}

func TestPerClientCap(t *testing.T) {
	ln, addr := serve(t, connlimit.Limits{PerClient: 3})
	held := []net.Conn{dial(t, addr), dial(t, addr), dial(t, addr)}
	testkit.Eventually(t, "three connections held", func() bool { _, n := ln.Open("127.0.0.1"); return n == 3 })
	code, body := refusal(t, dial(t, addr))
	if code != http.StatusTooManyRequests || !strings.Contains(body, "--max-conns-per-client") || !strings.Contains(body, "3") {
		t.Fatalf("fourth connection: %d %q; want 429 naming the flag and the limit", code, body)
	}
	// Closing one frees its slot.
	held[0].Close()
	testkit.Eventually(t, "a slot freed", func() bool { _, n := ln.Open("127.0.0.1"); return n == 2 })
	dial(t, addr)
	testkit.Eventually(t, "the slot taken again", func() bool { _, n := ln.Open("127.0.0.1"); return n == 3 })
	if ln.Refused() != 1 {
		t.Fatalf("refused %d, want 1", ln.Refused())
	}
}

func TestTotalCap(t *testing.T) {
	ln, addr := serve(t, connlimit.Limits{Total: 2, PerClient: 10})
	dial(t, addr)
	dial(t, addr)
	testkit.Eventually(t, "two connections held", func() bool { n, _ := ln.Open("127.0.0.1"); return n == 2 })
	code, body := refusal(t, dial(t, addr))
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "--max-conns") {
		t.Fatalf("third connection: %d %q; want 503 naming --max-conns", code, body)
	}
}
