package kinds

import (
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/store"
)

// PolicyFromProto converts a manifest's policy to its stored form.
func PolicyFromProto(p *convergev1.KindPolicy) store.Policy {
	return store.Policy{
		MaxInflight:           p.GetMaxInflight(),
		TaskDeadlineSeconds:   p.GetTaskDeadlineSeconds(),
		ResyncIntervalSeconds: p.GetResyncIntervalSeconds(),
		ResyncRecomposes:      p.GetResyncRecomposes(),
		OrphanGraceSeconds:    p.GetOrphanGraceSeconds(),
		MaxTransientAttempts:  p.GetMaxTransientAttempts(),
		Retired:               p.GetRetired(),
		DeletionPolicy:        p.GetDeletionPolicy(),
		ManagementPolicy:      p.GetManagementPolicy(),
	}
}

// PolicyToProto converts a stored policy to its manifest form.
func PolicyToProto(p store.Policy) *convergev1.KindPolicy {
	return &convergev1.KindPolicy{
		MaxInflight:           p.MaxInflight,
		TaskDeadlineSeconds:   p.TaskDeadlineSeconds,
		ResyncIntervalSeconds: p.ResyncIntervalSeconds,
		ResyncRecomposes:      p.ResyncRecomposes,
		OrphanGraceSeconds:    p.OrphanGraceSeconds,
		MaxTransientAttempts:  p.MaxTransientAttempts,
		Retired:               p.Retired,
		DeletionPolicy:        p.DeletionPolicy,
		ManagementPolicy:      p.ManagementPolicy,
	}
}

func timestamp(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}
