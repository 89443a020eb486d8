package api

import (
	"encoding/json"
	"strconv"
	"time"

	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/secret"
	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/trigger"
)

// This file is the one place where store rows become API messages.

// toStruct is the one place a stored document becomes output: every
// sealed secret value in it becomes its redaction marker.
func toStruct(raw []byte) *structpb.Struct {
	if len(raw) == 0 {
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(secret.RedactJSON(raw), &m); err != nil {
		return nil
	}
	s, err := structpb.NewStruct(m)
	if err != nil {
		return nil
	}
	return s
}

func toTime(t *time.Time) *timestamppb.Timestamp {
	if t == nil || t.IsZero() {
		return nil
	}
	return timestamppb.New(*t)
}

// storedCondition is the JSON shape of a condition in resources.conditions.
type storedCondition struct {
	Type               string `json:"type"`
	Status             string `json:"status"`
	Reason             string `json:"reason"`
	Message            string `json:"message"`
	LastTransitionTime string `json:"last_transition_time"`
}

// parked reports whether a reaction has no connected, ready worker
// anywhere, and why connected workers are not ready, if that is the case.
type parked func(kind string, version int32, trigger string) (reaction string, parked bool, notReady string)

func toResource(r store.Resource, isParked parked) *convergev1.Resource {
	out := &convergev1.Resource{
		Namespace:           r.Namespace,
		Kind:                r.Kind,
		KindVersion:         r.KindVersion,
		Name:                r.Name,
		Spec:                toStruct(r.Spec),
		Status:              toStruct(r.Status),
		Phase:               r.Phase,
		Generation:          r.Generation,
		SyncedGeneration:    r.SyncedGeneration,
		Healthy:             r.HealthOK,
		Uid:                 strconv.FormatInt(r.ID, 10),
		ResourceVersion:     r.ResourceVersion,
		Reconciles:          r.Reconciles,
		CreatedAt:           timestamppb.New(r.CreatedAt),
		UpdatedAt:           timestamppb.New(r.UpdatedAt),
		DeletionRequestedAt: toTime(r.DeletionRequestedAt),
	}
	if len(r.Labels) > 0 {
		_ = json.Unmarshal(r.Labels, &out.Labels)
	}
	if r.FailureMessage != nil {
		out.Failure = &convergev1.Failure{
			Message:    *r.FailureMessage,
			Attempts:   r.FailureAttempts,
			Terminal:   r.FailureTerminal,
			Generation: r.FailureGeneration,
			Reason:     deref(r.FailureReason),
		}
		if !r.FailureTerminal && r.Task != nil && !r.Task.Claimed {
			out.Failure.RetryAt = timestamppb.New(r.Task.NotBefore)
		}
	}
	out.Conditions = conditions(r, isParked)
	out.Owner, out.Root = toRef(r.Owner), toRef(r.Root)
	if r.Waiting != nil {
		out.Waiting = *r.Waiting
	}
	out.DeletionPolicy = r.DeletionPolicy
	out.ProviderConfig = r.ProviderConfig
	out.ManagementPolicy = r.ManagementPolicy
	out.EffectiveManagementPolicy = trigger.PolicyFull
	if r.Observed {
		out.EffectiveManagementPolicy = trigger.PolicyObserve
	}
	if r.ImportID != "" {
		out.Import = &convergev1.ResourceImport{Id: r.ImportID}
	}
	if len(r.Rollup) > 0 {
		out.Rollup = toRollup(r.Rollup)
	}
	out.RejectedStatus = toStruct(r.RejectedStatus)
	return out
}

func toRef(r *store.Ref) *convergev1.ResourceRef {
	if r == nil {
		return nil
	}
	return &convergev1.ResourceRef{Namespace: r.Namespace, Kind: r.Kind, Name: r.Name}
}

func toRollup(raw []byte) *convergev1.Rollup {
	var c store.RollupCounts
	if json.Unmarshal(raw, &c) != nil {
		return nil
	}
	return &convergev1.Rollup{Total: int32(c.Total), Ready: int32(c.Ready), Reconciling: int32(c.Reconciling),
		Degraded: int32(c.Degraded), Failed: int32(c.Failed), Deleting: int32(c.Deleting), Excluded: int32(c.Excluded)}
}

func toEvent(e store.Event) *convergev1.Event {
	return &convergev1.Event{
		Id: e.ID, Time: timestamppb.New(e.At), Namespace: e.Namespace, Kind: e.Kind, Name: e.Name,
		Uid: strconv.FormatInt(e.ResourceID, 10), Type: e.Type, Reason: e.Reason, Message: e.Message,
		Actor: e.Actor, Generation: e.Generation,
	}
}

func toChange(c store.Change) *convergev1.Change {
	out := &convergev1.Change{
		Cursor: c.Cursor.String(), Type: c.Type, Namespace: c.Namespace, Kind: c.Kind,
		KindVersion: c.KindVersion, Name: c.Name, Uid: strconv.FormatInt(c.ResourceID, 10), Phase: c.Phase,
		Generation: c.Generation, SyncedGeneration: c.SyncedGeneration, ResourceVersion: c.ResourceVersion,
		Time: timestamppb.New(c.At),
	}
	if c.PreviousPhase != nil {
		out.PreviousPhase = *c.PreviousPhase
	}
	if c.Message != nil {
		out.Message = *c.Message
	}
	return out
}
