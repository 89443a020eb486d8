package testkit

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/convergehq/converge/sdk-go/gen/converge/v1/convergev1connect"
)

// H2C is an HTTP client speaking cleartext HTTP/2, which worker streams
// (bidirectional) need.
func H2C() *http.Client {
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	return &http.Client{Transport: &http.Transport{Protocols: &p}}
}

// ServeWorkers serves h through the real Connect handler on a local
// cleartext HTTP/2 server until the test ends, and returns a client of it.
func ServeWorkers(t testing.TB, h convergev1connect.WorkerServiceHandler) convergev1connect.WorkerServiceClient {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle(convergev1connect.NewWorkerServiceHandler(h))
	srv := httptest.NewUnstartedServer(mux)
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetHTTP1(true)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Start()
	t.Cleanup(srv.Close)
	return convergev1connect.NewWorkerServiceClient(H2C(), srv.URL)
}
