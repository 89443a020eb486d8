package broker

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/kinds"
	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/trigger"
)

// taskOf builds the message a worker gets for a claimed task.
func (b *Broker) taskOf(e *kinds.Entry, c store.Claimed, reaction string, deadline time.Time) (*convergev1.Task, error) {
	return buildTask(b.kinds, e, c, reaction, deadline)
}

// PreviewTask builds the message a worker gets for a preview of c (a
// resource as a claim reads it, with the spec a planned change would give
// it): the task its reaction would get for real, marked as a preview, with
// a dedup token of its own so that no side effect keyed on the real one
// can be taken for done. The broker names its lease when it sends it.
func PreviewTask(reg *kinds.Registry, e *kinds.Entry, c store.Claimed, reaction string, deadline time.Time) (*convergev1.Task, error) {
	t, err := buildTask(reg, e, c, reaction, deadline)
	if err != nil {
		return nil, err
	}
	t.Preview = true
	t.DedupToken = "preview/" + t.DedupToken
	return t, nil
}

func buildTask(reg *kinds.Registry, e *kinds.Entry, c store.Claimed, reaction string, deadline time.Time) (*convergev1.Task, error) {
	t := &convergev1.Task{
		Lease:            protoLease(c.Lease),
		Kind:             c.Kind,
		KindVersion:      c.Version,
		Reaction:         reaction,
		Trigger:          c.Trigger,
		Deadline:         timestamppb.New(deadline),
		Attempt:          c.Attempt,
		DedupToken:       fmt.Sprintf("%d/%s/%d/%d", c.ResourceID, c.Trigger, c.Generation, c.TaskID),
		ManifestRevision: e.Revision,
		Rollup:           rollupOf(c.Rollup),
	}
	if c.Exists && c.Trigger != trigger.Reactor {
		t.Resource = &convergev1.TaskResource{
			Namespace: c.Namespace, Name: c.Name, Uid: fmt.Sprint(c.ResourceID),
			Generation: c.Generation, Labels: decodeLabels(c.Labels), Spec: c.Spec, Status: c.Status,
			RejectedStatus: c.RejectedStatus, ImportId: c.ImportID,
		}
	}
	t.Config = reg.EffectiveConfig(c.Kind, c.Version, c.ProviderConfig)
	switch {
	case strings.HasPrefix(c.Trigger, trigger.OperationPrefix):
		var p struct {
			ID    string          `json:"id"`
			Verb  string          `json:"verb"`
			Input json.RawMessage `json:"input"`
		}
		if err := json.Unmarshal(c.Payload, &p); err != nil {
			return nil, fmt.Errorf("operation payload: %w", err)
		}
		if len(p.Input) == 0 || string(p.Input) == "null" {
			p.Input = json.RawMessage("{}")
		}
		t.Trigger = trigger.Operation
		t.DedupToken = "operation/" + c.Key
		t.Operation = &convergev1.OperationTask{Id: p.ID, Verb: p.Verb, Input: p.Input}
	case c.Trigger == trigger.Reactor:
		var p struct {
			Binding    string `json:"binding"`
			Transition string `json:"transition"`
			Watched    struct {
				Namespace string `json:"namespace"`
				Kind      string `json:"kind"`
				Name      string `json:"name"`
			} `json:"watched"`
			KindVersion int32           `json:"watched_kind_version"`
			Generation  int64           `json:"watched_generation"`
			Phase       string          `json:"watched_phase"`
			Status      json.RawMessage `json:"watched_status"`
		}
		if err := json.Unmarshal(c.Payload, &p); err != nil {
			return nil, fmt.Errorf("reactor payload: %w", err)
		}
		if string(p.Status) == "null" {
			p.Status = nil
		}
		t.DedupToken = c.Key
		t.Reactor = &convergev1.ReactorTask{
			Binding:            p.Binding,
			Transition:         p.Transition,
			Watched:            &convergev1.ResourceRef{Namespace: p.Watched.Namespace, Kind: p.Watched.Kind, Name: p.Watched.Name},
			WatchedKindVersion: p.KindVersion,
			WatchedGeneration:  p.Generation,
			WatchedPhase:       p.Phase,
			WatchedStatus:      p.Status,
		}
	}
	return t, nil
}
