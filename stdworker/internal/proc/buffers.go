package proc

import (
	"strings"
	"sync"
	"unicode/utf8"
)

// capWriter keeps the first max bytes written to it, or with tail the last
// max bytes. Without tail, passing max closes overflow (once) and discards
// the rest, so the pipe keeps draining while the program is killed.
type capWriter struct {
	max      int
	tail     bool
	overflow chan struct{}

	mu        sync.Mutex
	buf       []byte
	truncated bool
	closed    bool
}

func (w *capWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	if w.tail {
		w.buf = append(w.buf, p...)
		if len(w.buf) > w.max {
			w.buf = append(w.buf[:0], w.buf[len(w.buf)-w.max:]...)
			w.truncated = true
		}
		return n, nil
	}
	if room := w.max - len(w.buf); len(p) > room {
		w.buf = append(w.buf, p[:max(room, 0)]...)
		w.truncated = true
		if !w.closed {
			w.closed = true
			close(w.overflow)
		}
		return n, nil
	}
	w.buf = append(w.buf, p...)
	return n, nil
}

func (w *capWriter) bytes() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]byte(nil), w.buf...)
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	mu  sync.Mutex
	buf []byte
}

func newTailBuffer(max int) *tailBuffer { return &tailBuffer{max: max} }

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > b.max {
		b.buf = append(b.buf[:0], b.buf[len(b.buf)-b.max:]...)
	}
	return len(p), nil
}

// String returns the tail as valid UTF-8: a character cut at the start is
// dropped and invalid bytes are replaced, so the tail can travel in messages
// and statuses.
func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return ValidTail(b.buf)
}

// ValidTail returns tail as valid UTF-8: up to three leading continuation
// bytes (a character cut in half by truncation) are dropped and any other
// invalid byte is replaced with U+FFFD.
func ValidTail(tail []byte) string {
	for i := 0; i < 3 && len(tail) > 0 && !utf8.RuneStart(tail[0]); i++ {
		tail = tail[1:]
	}
	return strings.ToValidUTF8(string(tail), "\uFFFD")
}
