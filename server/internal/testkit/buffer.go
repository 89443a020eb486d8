package testkit

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer that a process's output copier, a logger or
// a command's goroutine can write to while the test reads it. The zero
// value is ready to use; it must not be copied after first use.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p whole: concurrent writes never interleave.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String is everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Reset empties the buffer.
func (b *Buffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Reset()
}
