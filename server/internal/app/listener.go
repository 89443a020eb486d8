package app

import (
	"context"
	"net"
	"net/http"
	"time"
)

// listener is a side HTTP server (profiles, metrics) as a service: bound
// when it is made, so a taken address fails the start, and served until
// its context ends.
type listener struct {
	name string
	ln   net.Listener
	srv  *http.Server
}

func newListener(name string, ln net.Listener, h http.Handler) *listener {
	return &listener{name: name, ln: ln, srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}}
}

// Name implements service.Service.
func (l *listener) Name() string { return l.name }

// Run serves until ctx ends, then closes the listener and its connections:
// nothing served here is worth waiting for at shutdown.
func (l *listener) Run(ctx context.Context) {
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = l.srv.Serve(l.ln)
	}()
	select {
	case <-ctx.Done():
	case <-served:
		return
	}
	_ = l.srv.Close()
	<-served
}
