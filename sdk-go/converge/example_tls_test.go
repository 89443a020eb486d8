package converge_test

import (
	"context"
	"log"

	"github.com/convergehq/converge/sdk-go/converge"
)

// A worker dialing a server that requires mutual TLS, with its SPIFFE
// X.509 SVID as the client certificate. The files are re-read when they
// change, so a rotated SVID is used from the next connection on.
func ExampleWithTLS() {
	w, err := converge.NewWorker("https://converge.example.org:7070",
		converge.WithTLS("/run/spiffe/svid.pem", "/run/spiffe/svid-key.pem", "/run/spiffe/bundle.pem"))
	if err != nil {
		log.Fatal(err) // e.g. a certificate file that cannot be read
	}
	w.Handle("greeting", 1, "reconcile", func(ctx context.Context, t *converge.Task) (*converge.Result, error) {
		return &converge.Result{Status: map[string]any{"message": "hello"}}, nil
	})
	_ = w.Run(context.Background())
}
