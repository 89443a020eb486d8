package app_test

import (
	"context"
	"log/slog"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/convergehq/converge/server/internal/app"
	"github.com/convergehq/converge/server/internal/broker"
	"github.com/convergehq/converge/server/internal/pgtest"
	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/testkit"
)

// logBuffer is a log sink safe for the server's goroutines, read for the
// services it says were stopped.
type logBuffer struct{ testkit.Buffer }

var stoppingLine = regexp.MustCompile(`msg="stopping service" service="?([^"\n]+?)"?\n`)

// stopped lists the services a log says were stopped, in order.
func (l *logBuffer) stopped() []string {
	var out []string
	for _, m := range stoppingLine.FindAllStringSubmatch(l.String(), -1) {
		out = append(out, m[1])
	}
	return out
}

// TestEachRoleRunsItsServices: a server runs the background services of
// its roles and, on Stop, stops them one by one in the reverse order of
// their start, the side listeners first and the bus last; its member row
// is gone afterwards.
func TestEachRoleRunsItsServices(t *testing.T) {
	db := pgtest.New(t)
	core := []string{"members tracker", "kinds registry", "notify bus"}
	brokerSide := []string{"graph executor", "broker"}
	control := []string{"rollout driver", "reactor emitter", "dead member forgetter", "change-feed trimmer", "config requeuer", "resync queuer",
		"orphan expirer", "claim reaper", "lease reaper"}
	for _, c := range []struct {
		role    string
		metrics bool
		want    []string
	}{
		{app.RoleControl, false, slices.Concat(control, core)},
		{app.RoleBroker, false, slices.Concat(brokerSide, core)},
		{app.RoleAll, true, slices.Concat([]string{"metrics listener"}, control, brokerSide, core)},
	} {
		var logs logBuffer
		cfg := app.Config{DatabaseURL: db.URL, Listen: "127.0.0.1:0", Role: c.role,
			Broker: broker.Config{Lease: 2 * time.Second, HeartbeatInterval: 200 * time.Millisecond},
			Log:    slog.New(slog.NewTextHandler(&logs, nil))}
		if c.metrics {
			cfg.MetricsListen = "127.0.0.1:0"
		}
		a, err := app.Start(context.Background(), cfg)
		if err != nil {
			t.Fatalf("%s: %v", c.role, err)
		}
		if err := a.Stop(); err != nil {
			t.Fatalf("%s: stop: %v", c.role, err)
		}
		if got := logs.stopped(); !slices.Equal(got, c.want) {
			t.Errorf("%s stopped\n  %q\nwant\n  %q", c.role, got, c.want)
		}
		live, err := store.New(db.Pool, db.Pool).LiveMembers(context.Background(), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range live {
			if m.ID == a.MemberID() {
				t.Errorf("%s: the member row outlived the stop", c.role)
			}
		}
	}
}
