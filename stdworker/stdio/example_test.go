package stdio_test

import (
	"log"

	"github.com/convergehq/converge/sdk-go/converge"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/stdworker/stdio"
)

// A Go worker serving one of its reactions with a program, as stdworker
// would.
func ExampleHandler() {
	reconcile := &convergev1.Reaction{Name: "reconcile", Trigger: "specChange", Emits: []string{"status"}}
	h, err := stdio.Handler(stdio.Settings{Command: []string{"./backup.sh"}, TimeoutSeconds: 600}, reconcile)
	if err != nil {
		log.Fatal(err)
	}
	w, err := converge.NewWorker("http://localhost:7070")
	if err != nil {
		log.Fatal(err)
	}
	w.Handle("backup", 1, "reconcile", h)
	// w.Run(ctx) serves until ctx ends.
}

// What a program prints, turned into a worker's result.
func ExampleParseResponse() {
	resp, err := stdio.ParseResponse([]byte(`{"status": {"object": "backups/orders-1.sql.gz"}}`))
	if err != nil {
		log.Fatal(err)
	}
	res, err := resp.Result("specChange", []string{"status"})
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("%s", res.Status)
}
