package testkit

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"connectrpc.com/connect"

	"github.com/convergehq/converge/sdk-go/gen/converge/v1/convergev1connect"
)

// H2C is an HTTP client speaking cleartext HTTP/2, which worker streams
// (bidirectional) need.
func H2C() *http.Client {
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	return &http.Client{Transport: &http.Transport{Protocols: &p}}
}

// serve serves h on a local server speaking HTTP/1.1 and cleartext
// HTTP/2 until the test ends, and returns its URL.
func serve(t testing.TB, path string, h http.Handler) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle(path, h)
	srv := httptest.NewUnstartedServer(mux)
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetHTTP1(true)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
}

// ServeWorkers serves h through the real Connect handler until the test
// ends, and returns a client of it.
func ServeWorkers(t testing.TB, h convergev1connect.WorkerServiceHandler, opts ...connect.HandlerOption) convergev1connect.WorkerServiceClient {
	t.Helper()
	path, handler := convergev1connect.NewWorkerServiceHandler(h, opts...)
	return convergev1connect.NewWorkerServiceClient(H2C(), serve(t, path, handler))
}

// ServeControl serves h (the real API or a fake) through the real
// Connect handler until the test ends, and returns a client of it and
// its URL, for what takes a URL (conctl, the SDK).
func ServeControl(t testing.TB, h convergev1connect.ControlServiceHandler, opts ...connect.HandlerOption) (convergev1connect.ControlServiceClient, string) {
	t.Helper()
	path, handler := convergev1connect.NewControlServiceHandler(h, opts...)
	url := serve(t, path, handler)
	return convergev1connect.NewControlServiceClient(H2C(), url), url
}
