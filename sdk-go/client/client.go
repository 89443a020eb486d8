// Package client is a typed client for the Converge control API
// (converge.v1.ControlService) over Connect.
//
// A Client exposes every ControlService RPC and adds what programs need on
// top of them: Follow, a Watch that survives broken streams; WaitFor, which
// blocks until a resource reaches a state the caller chooses; and
// WaitForOperation, which blocks until an invoked operation has finished.
// An apply the server refuses for back-pressure (ResourceExhausted with a
// retry hint: the kind's backlog is at its admission bound) is retried
// after the hint for up to DefaultBackpressureWait; see WithBackpressure.
//
// A Client reads its own writes when the server reads from a replica: it
// sends back the latest token it was answered with (ReadAfterHeader), on
// calls and streams alike. ReadAfterToken returns that token, for handing to
// another program, which sends it in that header to read what this Client
// wrote.
//
// Errors are the connect errors the server returned: use connect.CodeOf to
// branch on the code and (*connect.Error).Message for the server's message,
// which names the offending field or rule.
package client

import (
	"maps"
	"net/http"

	"connectrpc.com/connect"

	"github.com/convergehq/converge/sdk-go/gen/converge/v1/convergev1connect"
	"github.com/convergehq/converge/sdk-go/internal/endpoint"
)

// DefaultBaseURL is where a local server listens by default.
const DefaultBaseURL = endpoint.DefaultURL

// EnvToken names the environment variable that conctl, stdworker and the
// SDK's workers read a bearer token from. New does not read it: a program
// that wants it passes WithBearerToken(os.Getenv(EnvToken)).
const EnvToken = endpoint.EnvToken

// Client calls a Converge server's control API. It embeds the generated
// ControlServiceClient, so every RPC (ApplyKind, GetResource, Watch, …) is a
// method of Client. A Client is safe for concurrent use.
type Client struct {
	convergev1connect.ControlServiceClient
	readAfter *readAfter
}

// ReadAfterToken returns the latest read-your-writes token this Client was
// answered with ("" if none yet, as from a server without a read replica).
// Another client that sends it in the ReadAfterHeader request header reads
// what this one wrote.
func (c *Client) ReadAfterToken() string {
	if c.readAfter == nil {
		return ""
	}
	return c.readAfter.get()
}

// An Option configures a Client.
type Option interface {
	apply(*config)
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	httpClient   connect.HTTPClient
	header       http.Header
	connectOpts  []connect.ClientOption
	backpressure backpressure
}

// WithHTTPClient sets the HTTP client used for every call. The default is
// http.DefaultClient. It must not set an overall request timeout, because
// Watch streams stay open; bound calls with contexts instead. A nil client
// keeps the default.
func WithHTTPClient(c connect.HTTPClient) Option {
	return optionFunc(func(cfg *config) {
		if c != nil {
			cfg.httpClient = c
		}
	})
}

// WithHeader adds a header to every request, streams included (for example
// an Authorization header). Repeating a key adds another value.
func WithHeader(key, value string) Option {
	return optionFunc(func(cfg *config) { cfg.header.Add(key, value) })
}

// WithBearerToken sends "Authorization: Bearer token" with every request,
// for a server that maps tokens to identities (converge serve
// --token-file). An empty token sends nothing.
func WithBearerToken(token string) Option {
	return optionFunc(func(cfg *config) {
		if token != "" {
			maps.Copy(cfg.header, endpoint.BearerHeader(token))
		}
	})
}

// WithConnectOptions passes options to the underlying connect client, for
// example connect.WithGRPC() or connect.WithProtoJSON().
func WithConnectOptions(opts ...connect.ClientOption) Option {
	return optionFunc(func(cfg *config) { cfg.connectOpts = append(cfg.connectOpts, opts...) })
}

// New returns a Client for the server at baseURL, e.g. "http://localhost:7070".
// It does not contact the server.
func New(baseURL string, opts ...Option) *Client {
	cfg := config{httpClient: http.DefaultClient, header: make(http.Header),
		backpressure: backpressure{maxWait: DefaultBackpressureWait}}
	for _, opt := range opts {
		if opt != nil {
			opt.apply(&cfg)
		}
	}
	// Read-your-writes is innermost, so it sees the headers the server
	// answered with and sets its own after the caller's; back-pressure is
	// outermost, so each retry is a whole call.
	ra := &readAfter{}
	connectOpts := append([]connect.ClientOption{}, cfg.connectOpts...)
	connectOpts = append(connectOpts, connect.WithInterceptors(ra))
	if cfg.backpressure.maxWait > 0 {
		connectOpts = append([]connect.ClientOption{connect.WithInterceptors(cfg.backpressure.interceptor())}, connectOpts...)
	}
	if len(cfg.header) > 0 {
		connectOpts = append([]connect.ClientOption{connect.WithInterceptors(endpoint.HeaderInterceptor(cfg.header))}, connectOpts...)
	}
	return &Client{
		ControlServiceClient: convergev1connect.NewControlServiceClient(cfg.httpClient, baseURL, connectOpts...),
		readAfter:            ra,
	}
}
