package app

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/convergehq/converge/server/internal/members"
	"github.com/convergehq/converge/server/internal/store"
)

// logLevel makes this replica log at the cluster's log level while one
// is set (SetLogLevel), and at its flag's otherwise; it reads the setting
// as often as the membership heartbeat runs.
type logLevel struct {
	st   *store.Store
	v    *slog.LevelVar
	flag slog.Level
	log  *slog.Logger
	mu   sync.Mutex
	cur  string // the setting last applied; "" for the flag
}

func newLogLevel(st *store.Store, v *slog.LevelVar, log *slog.Logger) *logLevel {
	return &logLevel{st: st, v: v, flag: v.Level(), log: log}
}

func (*logLevel) Name() string { return "log level follower" }

func (l *logLevel) Run(ctx context.Context) {
	tick := time.NewTicker(members.Interval)
	defer tick.Stop()
	for {
		l.sync(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// sync applies the stored setting now.
func (l *logLevel) sync(ctx context.Context) {
	st, ok, err := l.st.ClusterSetting(ctx, store.SettingLogLevel)
	if err != nil {
		return // the next beat tries again; the level stays as it is
	}
	want := ""
	if ok {
		want = st.Value
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if want == l.cur {
		return
	}
	level := l.flag
	if want != "" {
		if err := level.UnmarshalText([]byte(want)); err != nil {
			l.log.Warn("the cluster log level cannot be read; keeping the flag's", "value", want)
			level = l.flag
		}
	}
	l.cur = want
	// Logged at the level both before and after can see: Warn.
	l.log.Warn("log level changed", "level", level.String(), "cluster_setting", want, "set_by", st.SetBy)
	l.v.Set(level)
}
