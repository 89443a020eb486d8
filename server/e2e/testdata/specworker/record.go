package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"
)

// record is one line of the -record file.
type record struct {
	// Event is "compose", "settled" or "teardown".
	Event      string    `json:"event"`
	Kind       string    `json:"kind"`
	Name       string    `json:"name"`
	Generation int64     `json:"generation"`
	Start      time.Time `json:"start"`
	End        time.Time `json:"end"`
	// Error is what a failed handler returned.
	Error string `json:"error,omitempty"`
	// Rollup is what a childrenSettled task was given.
	Rollup *rollupCounts `json:"rollup,omitempty"`
}

// rollupCounts are the counts of a childrenSettled task's rollup.
type rollupCounts struct {
	Total       int `json:"total"`
	Ready       int `json:"ready"`
	Reconciling int `json:"reconciling"`
	Degraded    int `json:"degraded"`
	Failed      int `json:"failed"`
}

// recorder appends records to a file, one JSON line each, whole lines at
// a time so a reader never sees half of one.
type recorder struct {
	mu sync.Mutex
	f  *os.File
}

// add appends rec; a nil recorder does nothing.
func (r *recorder) add(rec record) {
	if r == nil {
		return
	}
	line, err := json.Marshal(rec)
	if err != nil {
		fmt.Fprintln(os.Stderr, "specworker: record:", err)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := r.f.Write(append(line, '\n')); err != nil {
		fmt.Fprintln(os.Stderr, "specworker: record:", err)
	}
}
