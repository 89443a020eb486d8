package api_test

import (
	"io"
	"log/slog"
	"testing"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/convergehq/converge/sdk-go/gen/converge/v1/convergev1connect"
	"github.com/convergehq/converge/server/internal/api"
	"github.com/convergehq/converge/server/internal/kinds"
	"github.com/convergehq/converge/server/internal/members"
	"github.com/convergehq/converge/server/internal/notify"
	"github.com/convergehq/converge/server/internal/rpcvalidate"
	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/testkit"
)

// serveAPI serves the control service on pool through the real Connect
// handler, validating requests as the server does, and returns a client
// with the store and bus underneath for arranging state and observing
// wake-ups.
func serveAPI(t *testing.T, pool *pgxpool.Pool) (convergev1connect.ControlServiceClient, *store.Store, *notify.Bus) {
	t.Helper()
	st := store.New(pool, pool)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	bus := notify.New(pool, "test", 1, log)
	reg := kinds.New(st, bus, log)
	mem := members.New(st, bus, store.Member{ID: "test"}, nil, log)
	validator, err := rpcvalidate.New()
	if err != nil {
		t.Fatal(err)
	}
	ctl, _ := testkit.ServeControl(t, api.New(st, reg, bus, mem, log), connect.WithInterceptors(validator))
	return ctl, st, bus
}
