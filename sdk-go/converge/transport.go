package converge

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/convergehq/converge/sdk-go/internal/endpoint"
)

// Liveness of an idle connection: with no frame from the server for
// pingAfter, the client pings; no answer within pingTimeout breaks the
// connection, so a silently dead network ends the stream and the worker
// reconnects instead of waiting forever.
const (
	pingAfter   = 15 * time.Second
	pingTimeout = 10 * time.Second
)

// Where a worker given no server URL finds one.
const (
	// EnvServer names the environment variable NewWorker reads the
	// server's URL from when it is given none.
	EnvServer = endpoint.Env
	// DefaultServerURL is the URL NewWorker dials when it is given none
	// and EnvServer is unset: a local server's default address.
	DefaultServerURL = endpoint.DefaultURL
	// EnvToken names the environment variable NewWorker reads a bearer
	// token from when given no [WithBearerToken].
	EnvToken = endpoint.EnvToken
)

// serverURLFrom picks the URL a worker dials, and checks it.
func serverURLFrom(arg string, getenv func(string) string) (string, error) {
	raw, source := arg, "given to NewWorker"
	if raw == "" {
		raw, source = getenv(EnvServer), "from $"+EnvServer
	}
	if raw == "" {
		return DefaultServerURL, nil
	}
	if err := checkServerURL(raw); err != nil {
		return "", fmt.Errorf("converge: server URL %q (%s): %w", raw, source, err)
	}
	return raw, nil
}

// checkServerURL accepts an absolute http:// or https:// URL with a host.
func checkServerURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return err
	case u.Scheme != "http" && u.Scheme != "https":
		return errors.New("scheme must be http or https")
	case u.Host == "":
		return errors.New("host is missing")
	}
	return nil
}

// newHTTPClient returns a client that speaks HTTP/2 only: over TLS for
// https:// URLs and cleartext (h2c) for http:// URLs, as a bidirectional
// stream requires.
func newHTTPClient() *http.Client {
	t := &http.Transport{}
	if d, ok := http.DefaultTransport.(*http.Transport); ok {
		t = d.Clone()
	}
	var p http.Protocols
	p.SetHTTP2(true)
	p.SetUnencryptedHTTP2(true)
	t.Protocols = &p
	t.HTTP2 = &http.HTTP2Config{SendPingTimeout: pingAfter, PingTimeout: pingTimeout}
	// An HTTP proxy cannot carry h2c, so only TLS connections use one.
	t.Proxy = func(r *http.Request) (*url.URL, error) {
		if r.URL.Scheme != "https" {
			return nil, nil
		}
		return http.ProxyFromEnvironment(r)
	}
	return &http.Client{Transport: t}
}

// defaultName is "<hostname>-<pid>".
func defaultName() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "worker"
	}
	return host + "-" + strconv.Itoa(os.Getpid())
}

// sdkVersion names this SDK and, when the binary records it, the version of
// the module it was built from.
func sdkVersion() string {
	const module = "github.com/convergehq/converge/sdk-go"
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "converge-go"
	}
	version := ""
	if info.Main.Path == module {
		version = info.Main.Version
	}
	for _, dep := range info.Deps {
		if dep.Path == module {
			version = dep.Version
		}
	}
	version = strings.TrimSpace(version)
	if version == "" {
		return "converge-go"
	}
	v := "converge-go/" + version
	if len(v) > maxSDKLen {
		v = v[:maxSDKLen]
	}
	return v
}

// maxSDKLen is the protocol's bound on Subscribe.sdk.
const maxSDKLen = 128
