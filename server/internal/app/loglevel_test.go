package app_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/sdk-go/gen/converge/v1/convergev1connect"
	"github.com/convergehq/converge/server/internal/app"
	"github.com/convergehq/converge/server/internal/pgtest"
	"github.com/convergehq/converge/server/internal/testkit"
)

// TestLogLevelIsSetForEveryReplica: SetLogLevel changes the level of the
// replica that takes the call at once and of the others within a
// heartbeat; a reset returns each to the level it started with.
func TestLogLevelIsSetForEveryReplica(t *testing.T) {
	db := pgtest.New(t)
	var levels [2]*slog.LevelVar
	var ctl [2]convergev1connect.ControlServiceClient
	for i := range levels {
		levels[i] = new(slog.LevelVar) // info
		a, err := app.Start(context.Background(), app.Config{DatabaseURL: db.URL, Listen: "127.0.0.1:0", Role: app.RoleAll,
			Log: slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: levels[i]})), LogLevel: levels[i]})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = a.Stop() })
		ctl[i] = convergev1connect.NewControlServiceClient(http.DefaultClient, "http://"+a.Addr().String())
	}
	ctx := context.Background()
	resp, err := ctl[0].SetLogLevel(ctx, &convergev1.SetLogLevelRequest{Level: "debug"})
	if err != nil || resp.GetLevel() != "debug" || resp.GetPrevious() != "" {
		t.Fatalf("SetLogLevel debug: %v, %v", resp, err)
	}
	if got := levels[0].Level(); got != slog.LevelDebug {
		t.Fatalf("the replica that took the call logs at %s, want DEBUG at once", got)
	}
	testkit.EventuallyWithin(t, 10*time.Second, "the other replica at debug", func() bool { return levels[1].Level() == slog.LevelDebug })
	c, err := ctl[1].GetCluster(ctx, &convergev1.GetClusterRequest{})
	if err != nil || c.GetLogLevel() != "debug" || c.GetLogLevelSetBy() == "" || c.GetLogLevelSetAt() == nil {
		t.Fatalf("GetCluster: log level %q set by %q at %v, %v", c.GetLogLevel(), c.GetLogLevelSetBy(), c.GetLogLevelSetAt(), err)
	}
	if _, err := ctl[1].SetLogLevel(ctx, &convergev1.SetLogLevelRequest{Level: "loud"}); code(err) != 3 {
		t.Fatalf("SetLogLevel loud: %v; want InvalidArgument", err)
	}
	resp, err = ctl[1].SetLogLevel(ctx, &convergev1.SetLogLevelRequest{})
	if err != nil || resp.GetPrevious() != "debug" {
		t.Fatalf("reset: %v, %v", resp, err)
	}
	testkit.EventuallyWithin(t, 10*time.Second, "both back at info", func() bool {
		return levels[0].Level() == slog.LevelInfo && levels[1].Level() == slog.LevelInfo
	})
}
