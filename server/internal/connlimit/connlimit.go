// Package connlimit bounds the connections a listener holds open, in
// total and per client address, so a crowd of slow or idle clients (from
// one address or many) cannot take every file descriptor and goroutine of
// the server. A connection over a limit is answered with a plain HTTP
// refusal saying which limit it hit, then closed.
package connlimit

import (
	"fmt"
	"net"
	"sync"
	"time"
)

// Limits are the caps; zero means no cap.
type Limits struct {
	Total     int
	PerClient int
}

// Listener wraps a listener with the caps.
type Listener struct {
	net.Listener
	limits Limits
	mu     sync.Mutex
	total  int
	per    map[string]int
	// Refused counts connections turned away, for tests and metrics.
	refused int
}

// Wrap bounds ln.
func Wrap(ln net.Listener, l Limits) *Listener {
	return &Listener{Listener: ln, limits: l, per: map[string]int{}}
}

// Accept returns the next connection within the caps; connections over a
// cap are refused and closed without being returned.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		host := clientHost(c.RemoteAddr())
		if status, why := l.admit(host); status != "" {
			go refuse(c, status, why)
			continue
		}
		return &conn{Conn: c, release: func() { l.release(host) }}, nil
	}
}

// admit takes a slot for host, or returns the status and message of the
// refusal. One address over its share is its own doing (429); the server
// full is not any one client's (503).
func (l *Listener) admit(host string) (status, why string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.limits.Total > 0 && l.total >= l.limits.Total {
		l.refused++
		return "503 Service Unavailable", fmt.Sprintf("the server holds its limit of %d connections (--max-conns); try again shortly\n", l.limits.Total)
	}
	if l.limits.PerClient > 0 && l.per[host] >= l.limits.PerClient {
		l.refused++
		return "429 Too Many Requests", fmt.Sprintf("this client address holds its limit of %d open connections (--max-conns-per-client); close some or reuse them\n", l.limits.PerClient)
	}
	l.total++
	l.per[host]++
	return "", ""
}

func (l *Listener) release(host string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total--
	if l.per[host]--; l.per[host] <= 0 {
		delete(l.per, host)
	}
}

// Open reports the connections held, in total and for host.
func (l *Listener) Open(host string) (total, perHost int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total, l.per[host]
}

// Refused reports how many connections were turned away.
func (l *Listener) Refused() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.refused
}

// refuse writes a minimal HTTP/1.1 response and closes. The write has a
// short deadline: a client that does not read is not waited on.
func refuse(c net.Conn, status, why string) {
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = fmt.Fprintf(c, "HTTP/1.1 %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nRetry-After: 1\r\nConnection: close\r\n\r\n%s",
		status, len(why), why)
	_ = c.Close()
}

func clientHost(a net.Addr) string {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.IP.String()
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}

// conn releases its slot once, on the first Close.
type conn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
