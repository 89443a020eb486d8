package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/convergehq/converge/sdk-go/converge"
)

// record is one line of the -record file.
type record struct {
	// Event is "task" for a task a handler ran, "config" for a default
	// provider config the server pushed.
	Event       string `json:"event"`
	Kind        string `json:"kind"`
	KindVersion int    `json:"kind_version"`
	Reaction    string `json:"reaction,omitempty"`
	Trigger     string `json:"trigger,omitempty"`
	Name        string `json:"name,omitempty"`
	UID         string `json:"uid,omitempty"`
	Generation  int64  `json:"generation,omitempty"`
	// Config is the task's effective config, or the pushed default.
	Config     json.RawMessage `json:"config,omitempty"`
	DedupToken string          `json:"dedup_token,omitempty"`
	ImportID   string          `json:"import_id,omitempty"`
	Operation  *opRecord       `json:"operation,omitempty"`
	Reactor    *reactorRecord  `json:"reactor,omitempty"`
	At         time.Time       `json:"at"`
}

type opRecord struct {
	ID    string          `json:"id"`
	Verb  string          `json:"verb"`
	Input json.RawMessage `json:"input,omitempty"`
}

type reactorRecord struct {
	Binding           string `json:"binding"`
	Transition        string `json:"transition"`
	WatchedKind       string `json:"watched_kind"`
	WatchedName       string `json:"watched_name"`
	WatchedGeneration int64  `json:"watched_generation"`
	WatchedPhase      string `json:"watched_phase"`
}

// taskRecord is the record of a task t that a handler runs.
func taskRecord(t *converge.Task) record {
	r := record{Event: "task", Kind: t.Kind, KindVersion: t.KindVersion, Reaction: t.Reaction, Trigger: t.Trigger,
		Name: t.Name, UID: t.UID, Generation: t.Generation, Config: t.Config, DedupToken: t.DedupToken, ImportID: t.ImportID, At: time.Now()}
	if op := t.Operation; op != nil {
		r.Operation = &opRecord{ID: op.ID, Verb: op.Verb, Input: op.Input}
	}
	if e := t.Reactor; e != nil {
		r.Reactor = &reactorRecord{Binding: e.Binding, Transition: e.Transition, WatchedKind: e.Watched.Kind,
			WatchedName: e.Watched.Name, WatchedGeneration: e.WatchedGeneration, WatchedPhase: e.WatchedPhase}
	}
	return r
}

// recorder appends records to a file, one JSON line each, whole lines at
// a time so a reader never sees half of one.
type recorder struct {
	mu sync.Mutex
	f  *os.File
}

func (r *recorder) add(rec record) {
	line, err := json.Marshal(rec)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lifecycleworker: record:", err)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := r.f.Write(append(line, '\n')); err != nil {
		fmt.Fprintln(os.Stderr, "lifecycleworker: record:", err)
	}
}
