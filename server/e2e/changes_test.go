//go:build unix

package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/convergehq/converge/sdk-go/client"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// changeLog follows the server's change feed (Watch) and keeps every
// change, in order. Changes carry the database's time of the change.
type changeLog struct {
	mu      sync.Mutex
	changes []*convergev1.Change
	grew    chan struct{} // closed and replaced whenever changes grows or the watch ends
	err     error         // why the watch ended, once it has
}

// watchChanges starts following every change on the server; it returns
// once the server has registered the watch, so every later change is seen.
func watchChanges(t *testing.T, c *client.Client) *changeLog {
	t.Helper()
	l := &changeLog{grew: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	registered := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var once sync.Once
		err := c.Follow(ctx, &convergev1.WatchRequest{}, func(resp *convergev1.WatchResponse) error {
			once.Do(func() { close(registered) })
			l.add(resp.GetChanges(), nil)
			return nil
		})
		if err == nil {
			err = errors.New("the watch ended")
		}
		l.add(nil, err)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	select {
	case <-registered:
	case <-done:
		t.Fatalf("watch: %v", l.err)
	case <-time.After(rawTimeout):
		t.Fatalf("the server did not register the watch within %s", rawTimeout)
	}
	return l
}

func (l *changeLog) add(cs []*convergev1.Change, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(cs) == 0 && err == nil {
		return
	}
	l.changes = append(l.changes, cs...)
	if err != nil && l.err == nil {
		l.err = err
	}
	close(l.grew)
	l.grew = make(chan struct{})
}

// await returns the first change at index from or later that matches,
// and its index, waiting up to timeout for it; what names it for the
// failure message.
func (l *changeLog) await(t *testing.T, from int, what string, timeout time.Duration, match func(*convergev1.Change) bool) (*convergev1.Change, int) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		l.mu.Lock()
		for i := from; i < len(l.changes); i++ {
			if match(l.changes[i]) {
				c := l.changes[i]
				l.mu.Unlock()
				return c, i
			}
		}
		grew, err, seen := l.grew, l.err, l.render(from)
		l.mu.Unlock()
		if err != nil {
			t.Fatalf("waiting for %s: the watch ended: %v; changes seen: %s", what, err, seen)
		}
		select {
		case <-grew:
		case <-deadline:
			t.Fatalf("no change %s within %s; changes seen: %s", what, timeout, seen)
		}
	}
}

// render lists changes from index from on; l.mu is held.
func (l *changeLog) render(from int) string {
	var parts []string
	for _, c := range l.changes[min(from, len(l.changes)):] {
		parts = append(parts, fmt.Sprintf("%s %s/%s %s->%s gen %d/%d", c.GetTime().AsTime().Format("15:04:05.000000"),
			c.GetKind(), c.GetName(), c.GetPreviousPhase(), c.GetPhase(), c.GetSyncedGeneration(), c.GetGeneration()))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}

// phaseOf matches a change of kind/name into phase.
func phaseOf(kind, name, phase string) func(*convergev1.Change) bool {
	return func(c *convergev1.Change) bool {
		return c.GetKind() == kind && c.GetName() == name && c.GetPhase() == phase && c.GetType() != "deleted"
	}
}
