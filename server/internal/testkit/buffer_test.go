package testkit

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// TestBufferUnderConcurrentWrites is for -race: writers and a reader at
// once, and every write kept whole.
func TestBufferUnderConcurrentWrites(t *testing.T) {
	const writers, lines = 8, 200
	var b Buffer
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range lines {
				fmt.Fprintf(&b, "writer %d line %d\n", w, i)
			}
		})
	}
	stop := make(chan struct{})
	read := make(chan struct{})
	go func() {
		defer close(read)
		for {
			select {
			case <-stop:
				return
			default:
			}
			// What a reader sees is always whole lines.
			if s := b.String(); s != "" && !strings.HasSuffix(s, "\n") {
				t.Errorf("read a torn write: %q", s[max(0, len(s)-40):])
				return
			}
		}
	}()
	wg.Wait()
	close(stop)
	<-read

	got := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(got) != writers*lines {
		t.Fatalf("%d lines, want %d", len(got), writers*lines)
	}
	seen := map[string]bool{}
	for _, l := range got {
		seen[l] = true
	}
	for w := range writers {
		for i := range lines {
			if l := fmt.Sprintf("writer %d line %d", w, i); !seen[l] {
				t.Fatalf("line %q missing or torn", l)
			}
		}
	}
}
