package convergetest

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/convergehq/converge/sdk-go/converge"
)

// The defaults of a task [NewTask] builds.
const (
	DefaultNamespace = "default"
	DefaultName      = "test"
	// defaultDeadline is the server's task deadline when the manifest's
	// policy sets none.
	defaultDeadline = 300 * time.Second
)

// TaskOption sets a field of a task [NewTask] builds.
type TaskOption func(*taskSettings)

type taskSettings struct {
	task *converge.Task
	// JSON-valued fields, encoded when the task is built so an error can
	// fail the test there.
	status, rejected, config, input any
	opID                            string
	preview                         bool
}

// WithName sets the resource's name; default [DefaultName].
func WithName(name string) TaskOption { return func(s *taskSettings) { s.task.Name = name } }

// WithNamespace sets the resource's namespace; default [DefaultNamespace].
func WithNamespace(ns string) TaskOption { return func(s *taskSettings) { s.task.Namespace = ns } }

// WithUID sets the resource's uid; by default one derived from its
// namespace, kind and name.
func WithUID(uid string) TaskOption { return func(s *taskSettings) { s.task.UID = uid } }

// WithLabels sets the resource's labels.
func WithLabels(labels map[string]string) TaskOption {
	return func(s *taskSettings) { s.task.Labels = labels }
}

// WithGeneration sets the resource's generation; default 1.
func WithGeneration(g int64) TaskOption { return func(s *taskSettings) { s.task.Generation = g } }

// WithAttempt sets the attempt; default 1, the first.
func WithAttempt(n int) TaskOption { return func(s *taskSettings) { s.task.Attempt = n } }

// WithImportID makes the task one of a resource that imports the existing
// object id (Task.ImportID).
func WithImportID(id string) TaskOption { return func(s *taskSettings) { s.task.ImportID = id } }

// AsPreview makes the task a plan's preview ([converge.Task.Preview]): its
// result is never applied, so a handler with side effects skips them.
func AsPreview() TaskOption { return func(s *taskSettings) { s.preview = true } }

// WithDedupToken sets the dedup token; by default one made of the uid,
// trigger and generation, as the server makes it.
func WithDedupToken(token string) TaskOption {
	return func(s *taskSettings) { s.task.DedupToken = token }
}

// WithDeadline sets the task's deadline; by default the kind's
// task_deadline_seconds (or the server's 300 s) from now. The zero time
// means none.
func WithDeadline(d time.Time) TaskOption { return func(s *taskSettings) { s.task.Deadline = d } }

// WithStatus sets the resource's last applied status: JSON text as a
// string, []byte or json.RawMessage, or a value encoding/json encodes to
// an object.
func WithStatus(status any) TaskOption { return func(s *taskSettings) { s.status = status } }

// WithRejectedStatus sets the last status the kind's status_schema
// refused, as [WithStatus] takes it.
func WithRejectedStatus(status any) TaskOption {
	return func(s *taskSettings) { s.rejected = status }
}

// WithConfig sets the resource's effective provider config, as
// [WithStatus] takes it; checked against the config_schema when the
// manifest has a validator ([ValidateWith]).
func WithConfig(config any) TaskOption { return func(s *taskSettings) { s.config = config } }

// WithRollup sets the children's summary of a childrenSettled task;
// default an empty one.
func WithRollup(r converge.Rollup) TaskOption {
	return func(s *taskSettings) { s.task.Rollup = &r }
}

// WithOperation sets an operation task's id (default "op-1") and input
// (default {}), as [WithStatus] takes it; the verb is the reaction's.
func WithOperation(id string, input any) TaskOption {
	return func(s *taskSettings) { s.opID, s.input = id, input }
}

// WithReactorEvent sets a reactor task's event; by default a resource
// default/watched of kind "watched" was created.
func WithReactorEvent(e converge.ReactorEvent) TaskOption {
	return func(s *taskSettings) { s.task.Reactor = &e }
}

// NewTask returns a task for reaction of the manifest's kind, as the
// server would dispatch it, for a resource with spec: JSON text as a
// string, []byte or json.RawMessage, or a value encoding/json encodes to
// an object (nil: {}). It is filled in as for the first attempt at a new
// resource: kind, version, reaction and its trigger, namespace
// [DefaultNamespace], name [DefaultName], a uid, generation 1, attempt 1,
// a dedup token and a deadline; opts change any of it. An operation task
// carries the reaction's verb ([WithOperation]), a childrenSettled task a
// rollup ([WithRollup]), a reactor task an event ([WithReactorEvent]) and,
// as from the server, no resource, so its spec must be nil.
//
// NewTask fails t for a reaction the manifest lacks, JSON that is not an
// object, and, with [ValidateWith], a spec, config or input its schema
// refuses.
func NewTask(t testing.TB, m *Manifest, reaction string, spec any, opts ...TaskOption) *converge.Task {
	t.Helper()
	task, err := newTask(m, reaction, spec, opts)
	if err != nil {
		t.Fatalf("convergetest: NewTask(%q): %v", reaction, err)
	}
	return task
}

func newTask(m *Manifest, reaction string, spec any, opts []TaskOption) (*converge.Task, error) {
	if m == nil {
		return nil, fmt.Errorf("the manifest is nil")
	}
	r, err := m.reaction(reaction)
	if err != nil {
		return nil, err
	}
	trigger := r.GetTrigger()
	task := &converge.Task{
		Kind:        m.Kind(),
		KindVersion: m.Version(),
		Reaction:    reaction,
		Trigger:     trigger,
		Namespace:   DefaultNamespace,
		Name:        DefaultName,
		Generation:  1,
		Attempt:     1,
		Deadline:    time.Now().Add(deadlineOf(m)),
	}
	s := &taskSettings{task: task}
	for _, o := range opts {
		o(s)
	}
	if trigger == "reactor" {
		if spec != nil {
			return nil, fmt.Errorf("a reactor task carries no resource: pass a nil spec")
		}
		task.Namespace, task.Name, task.Generation = "", "", 0
		if task.Reactor == nil {
			task.Reactor = &converge.ReactorEvent{Binding: "test", Transition: converge.TransitionCreated,
				Watched:            converge.Ref{Namespace: DefaultNamespace, Kind: "watched", Name: "watched"},
				WatchedKindVersion: 1, WatchedGeneration: 1, WatchedPhase: "Ready"}
		}
		if task.DedupToken == "" {
			task.DedupToken = "reactor/" + task.Reactor.Binding + "/" + task.Reactor.Transition + "/" + task.Reactor.Watched.Name
		}
	} else {
		if task.Spec, err = object("spec", spec, true); err != nil {
			return nil, err
		}
		if err := m.ValidateSpec(task.Spec); err != nil {
			return nil, err
		}
		if task.UID == "" {
			task.UID = uidOf(task.Namespace, task.Kind, task.Name)
		}
	}
	if task.Status, err = object("status", s.status, false); err != nil {
		return nil, err
	}
	if task.RejectedStatus, err = object("rejected status", s.rejected, false); err != nil {
		return nil, err
	}
	if task.Config, err = object("config", s.config, false); err != nil {
		return nil, err
	}
	if err := m.check("config_schema", schemaJSON(m.m.GetConfigSchema()), task.Config); err != nil {
		return nil, err
	}
	switch trigger {
	case "childrenSettled":
		if task.Rollup == nil {
			task.Rollup = &converge.Rollup{}
		}
	case "operation":
		if err := fillOperation(m, r.GetVerb(), s); err != nil {
			return nil, err
		}
	}
	if task.DedupToken == "" {
		task.DedupToken = fmt.Sprintf("%s/%s/%d/1", task.UID, trigger, task.Generation)
	}
	if s.preview {
		task = task.AsPreview()
	}
	return recording(task), nil
}

func fillOperation(m *Manifest, verb string, s *taskSettings) error {
	input, err := object("operation input", s.input, true)
	if err != nil {
		return err
	}
	for _, op := range m.m.GetOperations() {
		if op.GetVerb() == verb {
			if err := m.check("input_schema of verb "+verb, schemaJSON(op.GetInputSchema()), input); err != nil {
				return err
			}
		}
	}
	id := s.opID
	if id == "" {
		id = "op-1"
	}
	s.task.Operation = &converge.Operation{ID: id, Verb: verb, Input: input}
	if s.task.DedupToken == "" {
		s.task.DedupToken = "operation/" + id
	}
	return nil
}

// object encodes v as a JSON object: JSON text as a string, []byte or
// json.RawMessage, or any other value through encoding/json. nil is empty,
// or {} when orEmpty is set.
func object(what string, v any, orEmpty bool) (json.RawMessage, error) {
	var raw []byte
	switch v := v.(type) {
	case nil:
		if orEmpty {
			return json.RawMessage(`{}`), nil
		}
		return nil, nil
	case string:
		raw = []byte(v)
	case []byte:
		raw = v
	case json.RawMessage:
		raw = v
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		raw = b
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return nil, fmt.Errorf("%s: %s is not a JSON object", what, raw)
	}
	return json.RawMessage(raw), nil
}

// schemaJSON is a manifest schema as JSON; nil when absent.
func schemaJSON(s *structpb.Struct) json.RawMessage {
	if s == nil {
		return nil
	}
	b, err := protojson.Marshal(s)
	if err != nil {
		return nil // a Struct read from JSON always encodes
	}
	return b
}

func deadlineOf(m *Manifest) time.Duration {
	if s := m.m.GetPolicy().GetTaskDeadlineSeconds(); s > 0 {
		return time.Duration(s) * time.Second
	}
	return defaultDeadline
}

// uidOf is a stable stand-in for the server's uid, a resource's number.
func uidOf(namespace, kind, name string) string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(namespace + "/" + kind + "/" + name))
	return strconv.FormatUint(h.Sum64()%1_000_000_000, 10)
}
