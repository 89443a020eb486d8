// Package testkit is what the server's package tests share: waiting for
// a condition with a deadline, registering real kinds in a store, and a
// worker that speaks the worker protocol by hand over a real stream, so a
// test sees exactly what the SDK would hide.
package testkit

import (
	"testing"
	"time"
)

// Deadline bounds every wait in this package.
const Deadline = 10 * time.Second

// Eventually polls ok until it holds, failing the test after Deadline.
func Eventually(t testing.TB, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(Deadline)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
