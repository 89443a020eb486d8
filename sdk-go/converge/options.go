package converge

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"buf.build/go/protovalidate"
	"connectrpc.com/connect"
	"google.golang.org/protobuf/reflect/protoreflect"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// Defaults for the options below.
const (
	DefaultCapacity     = 16
	DefaultDrainTimeout = 30 * time.Second
	DefaultReconnectMin = 100 * time.Millisecond
	DefaultReconnectMax = 10 * time.Second
)

// maxCapacity is the protocol's bound on Subscribe.capacity.
const maxCapacity = 10000

// An Option configures a [Worker].
type Option interface {
	apply(*config)
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// config is a Worker's settings after options are applied. err holds the
// first invalid option; NewWorker reports it.
type config struct {
	capacity     int
	name         string
	logger       *slog.Logger
	httpClient   connect.HTTPClient
	token        string
	drainTimeout time.Duration
	backoffMin   time.Duration
	backoffMax   time.Duration
	onConfig     func(kind string, version int, config json.RawMessage)
	middleware   []Middleware
	err          error
}

func (c *config) fail(format string, args ...any) {
	if c.err == nil {
		c.err = fmt.Errorf("converge: "+format, args...)
	}
}

// WithCapacity sets how many handlers the worker runs at once, across all
// its reactions: between 1 and 10000, default [DefaultCapacity]. The server
// never has more than this many tasks outstanding on the worker.
func WithCapacity(n int) Option {
	return optionFunc(func(c *config) {
		if n < 1 || n > maxCapacity {
			c.fail("WithCapacity(%d): capacity must be between 1 and %d", n, maxCapacity)
			return
		}
		c.capacity = n
	})
}

// WithName sets the worker's display name, shown in server logs and
// diagnostics; at most 253 characters (NewWorker refuses a longer one). The default, also used for an
// empty name, is "<hostname>-<pid>". The name is not an identity: the
// server identifies workers by their connection.
func WithName(name string) Option {
	return optionFunc(func(c *config) {
		if name != "" {
			c.name = name
		}
	})
}

// WithLogger sets where the worker logs connection changes, server warnings
// and handler panics. The default is [slog.Default]; pass
// slog.New(slog.DiscardHandler) to silence the worker. A nil logger is
// ignored.
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(c *config) {
		if l != nil {
			c.logger = l
		}
	})
}

// WithHTTPClient sets the HTTP client used to dial the server. It must speak
// HTTP/2 (the worker stream is bidirectional): over TLS for https:// URLs,
// or cleartext HTTP/2 (h2c) for http:// URLs. The default client does both.
// Use it to configure TLS client certificates or custom dialing.
func WithHTTPClient(client connect.HTTPClient) Option {
	return optionFunc(func(c *config) {
		if client == nil {
			c.fail("WithHTTPClient(nil): client must not be nil")
			return
		}
		c.httpClient = client
	})
}

// WithBearerToken makes the worker send "Authorization: Bearer token" on
// its stream, for a server that identifies callers by token (converge
// serve --token-file). A worker given none sends the token in the
// environment variable [EnvToken] (CONVERGE_TOKEN) when it is set.
func WithBearerToken(token string) Option {
	return optionFunc(func(c *config) {
		if strings.ContainsAny(token, " \t\r\n") {
			c.fail("WithBearerToken: a token has no whitespace")
			return
		}
		c.token = token
	})
}

// WithDrainTimeout sets how long a drain waits for running handlers to
// finish before handing their tasks back to the server (another worker
// gets them at once) and cancelling their contexts; default
// [DefaultDrainTimeout].
func WithDrainTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) {
		if d <= 0 {
			c.fail("WithDrainTimeout(%s): timeout must be positive", d)
			return
		}
		c.drainTimeout = d
	})
}

// WithReconnectBackoff sets the bounds of the exponential backoff between
// reconnect attempts; defaults [DefaultReconnectMin] and
// [DefaultReconnectMax]. Before the n-th consecutive attempt (n from 0) the
// worker waits a uniformly random time in [0, min(maxDelay, minDelay·2ⁿ)]
// ("full jitter"), so a fleet of workers does not reconnect in lockstep
// after a server restart. The count restarts once a stream is subscribed.
func WithReconnectBackoff(minDelay, maxDelay time.Duration) Option {
	return optionFunc(func(c *config) {
		if minDelay <= 0 || maxDelay < minDelay {
			c.fail("WithReconnectBackoff(%s, %s): need 0 < min <= max", minDelay, maxDelay)
			return
		}
		c.backoffMin, c.backoffMax = minDelay, maxDelay
	})
}

// A HandlerOption configures one reaction registered with [Worker.Handle],
// e.g. [NeedsConfig].
type HandlerOption interface {
	applyHandler(*registration)
}

type handlerOptionFunc func(*registration)

func (f handlerOptionFunc) applyHandler(r *registration) { f(r) }

// registration is a registered reaction: its handler and options.
type registration struct {
	handler     HandlerFunc
	needsConfig bool
	middleware  []Middleware
}

// checkSubscription checks the settings the protocol bounds (the worker's
// name, its capacity) by the Subscribe message's own rules, so they are
// refused by NewWorker rather than by Run. The reactions are checked by
// Run, once they are registered.
func (c *config) checkSubscription() error {
	sub := &convergev1.Subscribe{WorkerName: c.name, Capacity: clampInt32(c.capacity)}
	reactions := sub.ProtoReflect().Descriptor().Fields().ByName("reactions")
	skipReactions := protovalidate.FilterFunc(func(_ protoreflect.Message, d protoreflect.Descriptor) bool {
		return d != reactions
	})
	err := protovalidate.Validate(sub, protovalidate.WithFilter(skipReactions))
	var verr *protovalidate.ValidationError
	if errors.As(err, &verr) && len(verr.Violations) > 0 {
		v := verr.Violations[0].Proto
		field := protovalidate.FieldPathString(v.GetField())
		return fmt.Errorf("converge: %s: %s %s", optionOf[field], field, v.GetMessage())
	}
	if err != nil {
		return fmt.Errorf("converge: invalid options: %w", err)
	}
	return nil
}

// optionOf names the option that sets a Subscribe field.
var optionOf = map[string]string{"worker_name": "WithName", "capacity": "WithCapacity"}
