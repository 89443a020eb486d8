package app

import "time"

// ClientLimits bound what one client can hold of the API listener: slow
// headers and bodies are cut off by deadlines, idle connections closed,
// and open connections capped in total and per client address. Worker
// streams are long-lived but each is one connection, within the caps.
type ClientLimits struct {
	// HeaderTimeout bounds reading a request's headers.
	HeaderTimeout time.Duration
	// BodyTimeout bounds an API request body's arrival after its headers.
	BodyTimeout time.Duration
	// IdleTimeout closes a keep-alive connection with no request this long.
	IdleTimeout time.Duration
	// MaxConns caps open connections in total.
	MaxConns int
	// MaxConnsPerClient caps open connections from one client address.
	MaxConnsPerClient int
}

// Defaults of ClientLimits, documented in docs/operations.md.
const (
	DefaultHeaderTimeout     = 10 * time.Second
	DefaultBodyTimeout       = 30 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultMaxConns          = 10000
	DefaultMaxConnsPerClient = 1000
)

func (c ClientLimits) withDefaults() ClientLimits {
	if c.HeaderTimeout <= 0 {
		c.HeaderTimeout = DefaultHeaderTimeout
	}
	if c.BodyTimeout <= 0 {
		c.BodyTimeout = DefaultBodyTimeout
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.MaxConns <= 0 {
		c.MaxConns = DefaultMaxConns
	}
	if c.MaxConnsPerClient <= 0 {
		c.MaxConnsPerClient = DefaultMaxConnsPerClient
	}
	return c
}
