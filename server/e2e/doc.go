// Package e2e holds end-to-end tests that run the real binaries as
// subprocesses: `converge serve`, `conctl`, the example workers `leaf`,
// `noop` and `landingzone`, and the tests' own workers (testdata/specworker
// for composition, testdata/lifecycleworker for kind lifecycle), over real
// PostgreSQL clusters.
//
// The package has no code of its own; its tests are in the _test.go files.
// Run them with
//
//	go test -race ./server/e2e/
//
// TestMain builds the binaries once (without -race: only the test process
// runs under the race detector), and each test starts its own server on a
// free port against a database of its own, with lease, poll and retry
// timings shortened so crashes and expiries play out in seconds. When a
// test fails, the output of every process it started is printed in its
// log. The tests need a unix system (they signal process groups) and the
// PostgreSQL server binaries, as package pgtest describes.
package e2e
