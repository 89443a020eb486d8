// Package testkit is what the server's package tests share: waiting for
// a condition with a deadline, a buffer safe to read while something
// writes to it, throwaway TLS certificates, registering real kinds in a
// store, serving a handler over a real Connect server, and a worker that
// speaks the worker protocol by hand over a real stream, so a test sees
// exactly what the SDK would hide.
//
// It is for tests only; packages outside server/ cannot import it.
package testkit
