package converge

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// kindVersion names a kind version; provider configs belong to one.
type kindVersion struct {
	kind    string
	version int
}

// WithOnConfig sets a function the worker calls when the default provider
// config of a kind version it serves arrives, changes or is removed, with
// the latest value: a JSON object, or nil once the kind version has no
// default config (any more). The server pushes default configs when the
// worker subscribes and whenever an operator edits one, so f sees edits
// live, without a restart.
//
// Calls are made one at a time, on a goroutine of their own, so f may take
// its time (to rebuild a client, say) without holding up tasks; tasks are
// not held for it either. When configs change faster than f returns,
// intermediate values are skipped: f always gets the latest. A panic in f
// is logged and the worker goes on. f must not block forever: once Run
// returns, a call still in progress is left behind.
//
// A handler should read its resource's config from [Task.Config], which is
// the effective config (the default with the resource's named config on
// top); use [Worker.DefaultConfig] to read the default at any time.
func WithOnConfig(f func(kind string, version int, config json.RawMessage)) Option {
	return optionFunc(func(c *config) {
		if f == nil {
			c.fail("WithOnConfig(nil): function must not be nil")
			return
		}
		c.onConfig = f
	})
}

// DefaultConfig returns the latest default provider config the server sent
// for version version of kind, a JSON object, or nil when there is none
// (none set yet, not received yet, or not a kind version the worker
// serves). The caller owns the returned bytes. It is safe to call from any
// goroutine, at any time.
func (w *Worker) DefaultConfig(kind string, version int) json.RawMessage {
	return w.configs.get(kindVersion{kind, version})
}

// configStore holds the default provider configs of the kind versions the
// worker serves, across streams, and queues changes for the OnConfig
// callback.
type configStore struct {
	mu     sync.Mutex
	served map[kindVersion]bool
	values map[kindVersion]json.RawMessage
	// pending are kind versions whose value changed since the callback last
	// saw them, oldest change first; queued mirrors it for lookups.
	pending []kindVersion
	queued  map[kindVersion]bool
	kick    chan struct{} // capacity 1: wakes the notifier
}

func newConfigStore() *configStore {
	return &configStore{
		served: make(map[kindVersion]bool),
		values: make(map[kindVersion]json.RawMessage),
		queued: make(map[kindVersion]bool),
		kick:   make(chan struct{}, 1),
	}
}

// serve records a kind version the worker serves; configs of others are
// ignored.
func (s *configStore) serve(kv kindVersion) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.served[kv] = true
}

func (s *configStore) get(kv kindVersion) json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.values[kv])
}

// configChange is a kind version whose default config appeared, changed or
// went away.
type configChange struct {
	kv      kindVersion
	present bool
}

// apply takes a Configs message. With complete set, kind versions the
// message does not name have no default config. It returns what changed,
// and a description of each entry it ignored.
func (s *configStore) apply(m *convergev1.Configs, complete bool) (changes []configChange, ignored []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := make(map[kindVersion]json.RawMessage)
	named := make(map[kindVersion]bool)
	for i, c := range m.GetConfigs() {
		kv := kindVersion{c.GetKind(), int(c.GetKindVersion())}
		if !s.served[kv] {
			ignored = append(ignored, fmt.Sprintf("configs[%d]: kind %q version %d is not served by this worker", i, kv.kind, kv.version))
			continue
		}
		if err := checkConfig(c.GetConfig()); err != nil {
			ignored = append(ignored, fmt.Sprintf("configs[%d] (kind %q version %d): config %v", i, kv.kind, kv.version, err))
			continue
		}
		named[kv] = true
		next[kv] = nil
		if hasConfig(c.GetConfig()) {
			next[kv] = bytes.Clone(c.GetConfig())
		}
	}
	if complete {
		for kv := range s.values {
			if !named[kv] {
				named[kv] = true
				next[kv] = nil
			}
		}
	}
	// In a fixed order, so callbacks and readiness follow the message.
	keys := make([]kindVersion, 0, len(next))
	for kv := range next {
		keys = append(keys, kv)
	}
	slices.SortFunc(keys, compareKindVersion)
	for _, kv := range keys {
		v := next[kv]
		if bytes.Equal(s.values[kv], v) {
			continue
		}
		if v == nil {
			delete(s.values, kv)
		} else {
			s.values[kv] = v
		}
		changes = append(changes, configChange{kv: kv, present: v != nil})
		if !s.queued[kv] {
			s.queued[kv] = true
			s.pending = append(s.pending, kv)
		}
	}
	if len(changes) > 0 {
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
	return changes, ignored
}

// nextChange takes the oldest queued change and returns the kind version's
// current value.
func (s *configStore) nextChange() (kindVersion, json.RawMessage, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pending) == 0 {
		s.pending = nil // let the backing array go
		return kindVersion{}, nil, false
	}
	kv := s.pending[0]
	s.pending = s.pending[1:]
	delete(s.queued, kv)
	return kv, bytes.Clone(s.values[kv]), true
}

// checkConfig accepts nothing, or a JSON object.
func checkConfig(b []byte) error {
	if !hasConfig(b) {
		return nil
	}
	if !json.Valid(b) {
		return fmt.Errorf("is not valid JSON")
	}
	if b := bytes.TrimLeft(b, " \t\r\n"); b[0] != '{' {
		return fmt.Errorf("must be a JSON object, got %s", jsonType(b))
	}
	return nil
}

// hasConfig reports whether a wire config is set: the server sends no bytes
// for "no config"; JSON null is read the same way.
func hasConfig(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && string(b) != "null"
}

func compareKindVersion(a, b kindVersion) int {
	return cmp.Or(cmp.Compare(a.kind, b.kind), cmp.Compare(a.version, b.version))
}

// onConfigs takes a Configs message from the server: it updates the
// store, the readiness of reactions that need a config, and wakes the
// OnConfig callback.
func (w *Worker) onConfigs(m *convergev1.Configs, complete bool) {
	changes, ignored := w.configs.apply(m, complete)
	for _, msg := range ignored {
		w.log.Warn("converge: ignoring a provider config from the server: " + msg)
	}
	for _, c := range changes {
		w.readiness.setConfig(c.kv, c.present)
	}
}

// notifyConfigs calls the OnConfig callback for queued changes until stop
// is closed.
func (w *Worker) notifyConfigs(stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-w.configs.kick:
		}
		for !isClosed(stop) {
			kv, value, ok := w.configs.nextChange()
			if !ok {
				break
			}
			w.callOnConfig(kv, value)
		}
	}
}

func (w *Worker) callOnConfig(kv kindVersion, value json.RawMessage) {
	defer func() {
		if v := recover(); v != nil {
			w.log.Error("converge: OnConfig panicked", "kind", kv.kind, "version", kv.version, "panic", v)
		}
	}()
	w.cfg.onConfig(kv.kind, kv.version, value)
}

// stopNotifier stops the OnConfig goroutine, waiting a little for a call
// in progress to return.
func (w *Worker) stopNotifier(stop chan<- struct{}, done <-chan struct{}) {
	close(stop)
	select {
	case <-done:
	case <-time.After(w.waits.drainGrace):
		w.log.Warn("converge: OnConfig has not returned; leaving it running")
	}
}
