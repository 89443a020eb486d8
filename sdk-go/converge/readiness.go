package converge

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// NoConfigReason is the reason a reaction registered with [NeedsConfig]
// is reported not ready while its kind version has no default provider
// config.
const NoConfigReason = "no default provider config yet"

// maxReasonChars is the protocol's bound on a readiness reason.
const maxReasonChars = 1024

// NeedsConfig makes a reaction wait for its kind version's default provider
// config: until the server has sent a default config (a JSON object, even
// an empty one), the worker reports the reaction not ready with the reason
// [NoConfigReason], and the server parks its resources instead of sending
// tasks; once the config arrives the reaction is ready, and it becomes not
// ready again if the default config is removed.
//
// A task can still reach the worker while the report is on its way (the
// server dispatches as soon as a stream is subscribed). The handler of a
// NeedsConfig reaction is never called for a task whose [Task.Config] is
// empty: the worker reports such a task as a transient failure instead,
// and the server retries it later.
func NeedsConfig() HandlerOption {
	return handlerOptionFunc(func(r *registration) { r.needsConfig = true })
}

// SetReady tells the server whether the worker can serve version version
// of kind's reaction right now, for handlers that know better than the
// worker, e.g. while a dependency is down. A reaction that is not ready
// gets no tasks: its resources wait, parked, and the reason is shown to
// operators; at most 1024 characters are kept. Reactions are ready until
// SetReady says otherwise.
//
// With [NeedsConfig], a reaction is ready only when SetReady and the
// config both allow it. SetReady may be called from any goroutine, before
// or during Run; the worker reports every change, and reports the current
// state again on every new stream. It fails only for a reaction that has
// no handler.
func (w *Worker) SetReady(kind string, version int, reaction string, ready bool, reason string) error {
	if err := w.readiness.set(reactionKey{kind, version, reaction}, ready, reason); err != nil {
		return fmt.Errorf("converge: SetReady(%q, %d, %q): %w", kind, version, reaction, err)
	}
	return nil
}

// readiness is what the worker knows about its reactions' readiness; it
// outlives streams. Each stream's sender reports the difference between
// it and what that stream's server was told (see changes).
type readiness struct {
	mu        sync.Mutex
	reactions map[reactionKey]*reactionState
	// configs are the kind versions that have a default config.
	configs map[kindVersion]bool
	// gen counts changes, so an unchanged state costs a sender nothing.
	gen  uint64
	kick chan struct{} // capacity 1: wakes the live stream's sender
}

// reactionState is one reaction's inputs to its readiness.
type reactionState struct {
	needsConfig bool
	// notReady and reason are the last SetReady call's.
	notReady bool
	reason   string
}

// readyStatus is what the server is told about one reaction.
type readyStatus struct {
	ready  bool
	reason string
}

// serverDefault is what a server assumes of a reaction it has not been
// told about: it is ready.
var serverDefault = readyStatus{ready: true}

func newReadiness() *readiness {
	return &readiness{
		reactions: make(map[reactionKey]*reactionState),
		configs:   make(map[kindVersion]bool),
		kick:      make(chan struct{}, 1),
	}
}

// add registers a reaction.
func (r *readiness) add(k reactionKey, needsConfig bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reactions[k] = &reactionState{needsConfig: needsConfig}
	r.changedLocked()
}

func (r *readiness) set(k reactionKey, ready bool, reason string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.reactions[k]
	if st == nil {
		return fmt.Errorf("no handler is registered for this reaction")
	}
	reason = boundReason(reason)
	if st.notReady == !ready && st.reason == reason {
		return nil
	}
	st.notReady, st.reason = !ready, reason
	r.changedLocked()
	return nil
}

// setConfig records whether a kind version has a default config.
func (r *readiness) setConfig(kv kindVersion, present bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.configs[kv] == present {
		return
	}
	if present {
		r.configs[kv] = true
	} else {
		delete(r.configs, kv)
	}
	r.changedLocked()
}

func (r *readiness) changedLocked() {
	r.gen++
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// statusLocked is a reaction's readiness: both its config (if it needs
// one) and its last SetReady must allow it.
func (r *readiness) statusLocked(k reactionKey, st *reactionState) readyStatus {
	var why []string
	if st.needsConfig && !r.configs[kindVersion{k.kind, k.version}] {
		why = append(why, NoConfigReason)
	}
	if st.notReady {
		why = append(why, st.reason)
	}
	if len(why) == 0 {
		return readyStatus{ready: true, reason: st.reason}
	}
	return readyStatus{reason: boundReason(strings.Join(slices.DeleteFunc(why, isBlank), "; "))}
}

// streamReadiness is what one stream's server has been told; the zero
// value is a new stream's.
type streamReadiness struct {
	synced bool
	gen    uint64
	told   map[reactionKey]readyStatus
}

// changes returns the Readiness message that brings the stream's server up
// to date, and records it as told; nil when the server is up to date.
func (r *readiness) changes(s *streamReadiness) *convergev1.Readiness {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s.synced && s.gen == r.gen {
		return nil
	}
	s.synced, s.gen = true, r.gen
	if s.told == nil {
		s.told = make(map[reactionKey]readyStatus)
	}
	var out []*convergev1.ReactionReadiness
	for k, st := range r.reactions {
		now := r.statusLocked(k, st)
		was, ok := s.told[k]
		if !ok {
			was = serverDefault
		}
		if now == was {
			continue
		}
		s.told[k] = now
		out = append(out, &convergev1.ReactionReadiness{
			Reaction: &convergev1.ReactionRef{Kind: k.kind, KindVersion: clampInt32(k.version), Reaction: k.reaction},
			Ready:    now.ready,
			Reason:   now.reason,
		})
	}
	if len(out) == 0 {
		return nil
	}
	slices.SortFunc(out, func(a, b *convergev1.ReactionReadiness) int {
		x, y := a.GetReaction(), b.GetReaction()
		return cmp.Or(cmp.Compare(x.Kind, y.Kind), cmp.Compare(x.KindVersion, y.KindVersion), cmp.Compare(x.Reaction, y.Reaction))
	})
	return &convergev1.Readiness{Reactions: out}
}

// boundReason makes a reason valid UTF-8 of at most maxReasonChars
// characters.
func boundReason(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if utf8.RuneCountInString(s) <= maxReasonChars {
		return s
	}
	runes := []rune(s)
	return string(runes[:maxReasonChars-1]) + "…"
}

func isBlank(s string) bool { return strings.TrimSpace(s) == "" }
