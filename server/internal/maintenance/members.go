package maintenance

import (
	"context"
	"log/slog"
	"time"

	"github.com/convergehq/converge/server/internal/store"
)

// ForgetAfter is how long a silent member's row is kept. Silence for
// members.LiveWithin already makes a member gone for every purpose; the
// row only waits to be tidied away.
const ForgetAfter = 10 * time.Minute

// MemberForgetter deletes the rows of replicas that stopped heartbeating
// without a clean shutdown (which deletes its own row).
type MemberForgetter struct {
	interval time.Duration
	after    time.Duration
	store    *store.Store
	log      *slog.Logger
}

// NewMemberForgetter returns a forgetter that looks every interval for
// members silent for ForgetAfter.
func NewMemberForgetter(interval time.Duration, st *store.Store, log *slog.Logger) *MemberForgetter {
	return &MemberForgetter{interval: interval, after: ForgetAfter, store: st, log: log}
}

// Name implements service.Service.
func (*MemberForgetter) Name() string { return "dead member forgetter" }

// Run forgets dead members until ctx ends.
func (f *MemberForgetter) Run(ctx context.Context) { every(ctx, f.interval, f.forget) }

func (f *MemberForgetter) forget(ctx context.Context) {
	if _, err := f.store.ForgetDeadMembers(ctx, f.after); err != nil && ctx.Err() == nil {
		f.log.Warn("forgetting dead members failed", "err", err)
	}
}
