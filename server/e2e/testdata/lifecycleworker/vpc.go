package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/convergehq/converge/sdk-go/converge"
)

// kindVPC is a leaf whose external objects are files in -objects-dir: an
// object with id ID is the file ID.json holding its state, {"cidr": …}.
// The tests put objects there to import, and read them to see whether
// the worker changed them.
const kindVPC = "vpc"

type vpcSpec struct {
	CIDR string `json:"cidr"`
}

type vpcStatus struct {
	ID   string `json:"id,omitempty"`
	CIDR string `json:"cidr,omitempty"`
}

func (h *handlers) registerVPC(w *converge.Worker) {
	w.Handle(kindVPC, 1, "reconcile", h.vpcReconcile)
	w.Handle(kindVPC, 1, "observe", h.vpcObserve)
	w.Handle(kindVPC, 1, "delete", h.vpcDelete)
}

func (h *handlers) objectPath(id string) string { return filepath.Join(h.objectsDir, id+".json") }

// readObject reads the object id, or fails the task as ImportNotFound
// when there is none.
func (h *handlers) readObject(id string) (vpcStatus, error) {
	raw, err := os.ReadFile(h.objectPath(id))
	if errors.Is(err, fs.ErrNotExist) {
		return vpcStatus{}, converge.ImportNotFound(id, nil)
	}
	if err != nil {
		return vpcStatus{}, err
	}
	var st vpcStatus
	if err := json.Unmarshal(raw, &st); err != nil {
		return vpcStatus{}, fmt.Errorf("object %s: %w", id, err)
	}
	st.ID = id
	return st, nil
}

// vpcID is the object a task is about: the one its last status names,
// else the one it imports; "" when it has none yet.
func vpcID(t *converge.Task) (string, error) {
	var st vpcStatus
	if err := t.DecodeStatus(&st); err != nil {
		return "", converge.Terminal(err)
	}
	if st.ID != "" {
		return st.ID, nil
	}
	return t.ImportID, nil
}

// vpcReconcile creates the object (vpc-NAME), or adopts the imported
// one, and converges it on the spec.
func (h *handlers) vpcReconcile(_ context.Context, t *converge.Task) (*converge.Result, error) {
	h.records.add(taskRecord(t))
	var spec vpcSpec
	if err := t.DecodeSpec(&spec); err != nil {
		return nil, converge.Terminal(err)
	}
	id, err := vpcID(t)
	if err != nil {
		return nil, err
	}
	if id == "" {
		id = "vpc-" + t.Name
	} else if _, err := h.readObject(id); err != nil {
		return nil, err
	}
	st := vpcStatus{ID: id, CIDR: spec.CIDR}
	raw, _ := json.Marshal(vpcStatus{CIDR: spec.CIDR})
	if err := os.WriteFile(h.objectPath(id), raw, 0o644); err != nil {
		return nil, err
	}
	return &converge.Result{Status: st}, nil
}

// vpcObserve reports the object as it is and changes nothing.
func (h *handlers) vpcObserve(_ context.Context, t *converge.Task) (*converge.Result, error) {
	h.records.add(taskRecord(t))
	id, err := vpcID(t)
	if err != nil {
		return nil, err
	}
	if id == "" {
		return nil, converge.Terminal(errors.New("an observed vpc needs an import id: there is nothing to observe"))
	}
	st, err := h.readObject(id)
	if err != nil {
		return nil, err
	}
	return &converge.Result{Status: st}, nil
}

// vpcDelete removes the object.
func (h *handlers) vpcDelete(_ context.Context, t *converge.Task) (*converge.Result, error) {
	h.records.add(taskRecord(t))
	id, err := vpcID(t)
	if err != nil || id == "" {
		return &converge.Result{}, err
	}
	if err := os.Remove(h.objectPath(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return &converge.Result{}, nil
}
