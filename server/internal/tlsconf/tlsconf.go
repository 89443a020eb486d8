// Package tlsconf builds the server's TLS configuration: a certificate and
// key, and optionally a client CA for mutual TLS, all re-read when their
// files change; and SPIFFE ID allowlists that admit callers per audience
// (the control API or the worker endpoint).
package tlsconf

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/convergehq/converge/sdk-go/tlsfiles"
)

// Client certificate policies under a client CA.
const (
	// ClientAuthRequire: every connection must present a certificate the
	// client CA verifies.
	ClientAuthRequire = "require"
	// ClientAuthRequest: a certificate is asked for and, if presented,
	// verified; connections without one are accepted (for probes), and
	// the allowlists then decide per path.
	ClientAuthRequest = "request"
)

// DefaultCheckInterval is the least gap between two checks of the files
// for changes.
const DefaultCheckInterval = 2 * time.Second

// Config says where the TLS material is and whom to admit.
type Config struct {
	// CertFile and KeyFile hold the server certificate chain and key (PEM).
	CertFile, KeyFile string
	// ClientCAFile, if set, holds the CAs that verify client certificates
	// (PEM); it turns on mutual TLS.
	ClientCAFile string
	// ClientAuth is ClientAuthRequire (default) or ClientAuthRequest.
	ClientAuth string
	// AllowAPIIDs and AllowWorkerIDs are the SPIFFE allowlists of the two
	// audiences (see ParseAllowlist); they need ClientCAFile.
	AllowAPIIDs, AllowWorkerIDs []string
	// CheckInterval is the least gap between two checks of the files for
	// changes (0: DefaultCheckInterval; negative: every handshake).
	CheckInterval time.Duration
}

// Enabled reports whether cfg asks for TLS at all.
func (cfg Config) Enabled() bool {
	return cfg.CertFile != "" || cfg.KeyFile != "" || cfg.ClientCAFile != "" ||
		len(cfg.AllowAPIIDs) > 0 || len(cfg.AllowWorkerIDs) > 0
}

// Server serves TLS from files it re-reads when they change. A new file
// that does not load is logged and the previous material stays in use.
type Server struct {
	cfg        Config
	clientAuth tls.ClientAuthType
	log        *slog.Logger
	// API and Worker are the allowlists of the two audiences.
	API, Worker Allowlist

	mu      sync.Mutex
	checked time.Time
	stamps  []stamp
	current *tls.Config
}

// stamp identifies one version of a file cheaply.
type stamp struct {
	mod  time.Time
	size int64
}

// New checks cfg and loads the files.
func New(cfg Config, log *slog.Logger) (*Server, error) {
	if log == nil {
		log = slog.Default()
	}
	if cfg.CertFile == "" || cfg.KeyFile == "" {
		return nil, errors.New("--tls-cert and --tls-key: both are required to serve TLS")
	}
	s := &Server{cfg: cfg, log: log}
	switch cfg.ClientAuth {
	case ClientAuthRequire, "":
		s.clientAuth = tls.RequireAndVerifyClientCert
	case ClientAuthRequest:
		s.clientAuth = tls.VerifyClientCertIfGiven
	default:
		return nil, fmt.Errorf("--tls-client-auth %q: must be require or request", cfg.ClientAuth)
	}
	if cfg.ClientCAFile == "" {
		s.clientAuth = tls.NoClientCert
		if len(cfg.AllowAPIIDs) > 0 || len(cfg.AllowWorkerIDs) > 0 {
			return nil, errors.New("--allow-api-ids and --allow-worker-ids need --tls-client-ca: identities come from verified client certificates")
		}
	}
	var err error
	if s.API, err = ParseAllowlist("--allow-api-ids", cfg.AllowAPIIDs); err != nil {
		return nil, err
	}
	if s.Worker, err = ParseAllowlist("--allow-worker-ids", cfg.AllowWorkerIDs); err != nil {
		return nil, err
	}
	if s.cfg.CheckInterval == 0 {
		s.cfg.CheckInterval = DefaultCheckInterval
	}
	stamps := s.stat()
	current, err := s.load()
	if err != nil {
		return nil, err
	}
	s.current, s.stamps, s.checked = current, stamps, time.Now()
	return s, nil
}

// TLSConfig is the listener's configuration: each handshake gets the
// newest material that loaded. It offers HTTP/2 and HTTP/1.1 by ALPN.
func (s *Server) TLSConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"h2", "http/1.1"},
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return s.config(), nil
		},
	}
}

// config returns the current material, reloading it first if a file
// changed since the last load attempt.
func (s *Server) config() *tls.Config {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if now.Sub(s.checked) < s.cfg.CheckInterval {
		return s.current
	}
	s.checked = now
	stamps := s.stat()
	if sameStamps(stamps, s.stamps) {
		return s.current
	}
	// Remember the attempt either way: a bad file is reported once, and
	// retried when it changes again.
	s.stamps = stamps
	next, err := s.load()
	if err != nil {
		s.log.Error("reloading TLS files; keeping the previous certificate", "err", err)
		return s.current
	}
	s.current = next
	s.log.Info("reloaded TLS files", "cert", s.cfg.CertFile, "client_ca", s.cfg.ClientCAFile)
	return s.current
}

func (s *Server) files() []string {
	return []string{s.cfg.CertFile, s.cfg.KeyFile, s.cfg.ClientCAFile}
}

func (s *Server) stat() []stamp {
	out := make([]stamp, 0, 3)
	for _, f := range s.files() {
		var st stamp
		if f != "" {
			if info, err := os.Stat(f); err == nil {
				st = stamp{info.ModTime(), info.Size()}
			}
		}
		out = append(out, st)
	}
	return out
}

func sameStamps(a, b []stamp) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].mod.Equal(b[i].mod) || a[i].size != b[i].size {
			return false
		}
	}
	return true
}

// load reads the files into a handshake configuration.
func (s *Server) load() (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(s.cfg.CertFile, s.cfg.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert %s / --tls-key %s: %w", s.cfg.CertFile, s.cfg.KeyFile, err)
	}
	c := &tls.Config{
		MinVersion:   tls.VersionTLS12,
		NextProtos:   []string{"h2", "http/1.1"},
		Certificates: []tls.Certificate{cert},
		ClientAuth:   s.clientAuth,
	}
	if s.cfg.ClientCAFile != "" {
		pool, err := tlsfiles.CertPool(s.cfg.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("--tls-client-ca: %w", err)
		}
		c.ClientCAs = pool
	}
	return c, nil
}
