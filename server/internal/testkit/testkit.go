// Package testkit is what the server's package tests share: waiting for
// a condition or an event with a deadline, a buffer safe to read while
// something writes to it, throwaway TLS certificates, registering real
// kinds in a store, serving a handler over a real Connect server, and a
// worker that speaks the worker protocol by hand over a real stream, so
// a test sees exactly what the SDK would hide.
//
// It is for tests only. Packages outside server/ cannot import it, and
// since it imports the store and kinds packages, neither their in-package
// tests nor those of what they import can (external _test packages can).
package testkit
