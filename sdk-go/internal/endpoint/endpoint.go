// Package endpoint holds where the SDK's workers and clients find a
// Converge server by default, so the worker, the client and the tools
// built on them agree.
package endpoint

const (
	// Env names the environment variable that gives the server's URL.
	Env = "CONVERGE_SERVER"
	// DefaultURL is where a local server listens by default.
	DefaultURL = "http://localhost:7070"
)
