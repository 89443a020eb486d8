package converge

import (
	"strings"
	"testing"
)

func TestBearerTokenReachesTheStream(t *testing.T) {
	f := newFakeServer(t)
	w := newTestWorker(f, WithBearerToken("tok-worker"))
	w.Handle("a", 1, "reconcile", nop)
	w.run(t)
	if got := f.accept(t).header.Get("Authorization"); got != "Bearer tok-worker" {
		t.Fatalf("Authorization = %q, want Bearer tok-worker", got)
	}
}

func TestBearerTokenFromEnvironment(t *testing.T) {
	t.Setenv(EnvToken, " tok-env\n")
	f := newFakeServer(t)
	w := newTestWorker(f)
	w.Handle("a", 1, "reconcile", nop)
	w.run(t)
	if got := f.accept(t).header.Get("Authorization"); got != "Bearer tok-env" {
		t.Fatalf("Authorization = %q, want Bearer tok-env", got)
	}
}

func TestNoTokenSendsNoAuthorization(t *testing.T) {
	t.Setenv(EnvToken, "")
	f := newFakeServer(t)
	w := newTestWorker(f)
	w.Handle("a", 1, "reconcile", nop)
	w.run(t)
	if got := f.accept(t).header.Get("Authorization"); got != "" {
		t.Fatalf("Authorization = %q, want none", got)
	}
}

func TestBearerTokenRefusesWhitespace(t *testing.T) {
	_, err := NewWorker("http://localhost:1", WithBearerToken("two words"))
	if err == nil || !strings.Contains(err.Error(), "WithBearerToken") {
		t.Fatalf("err = %v, want one naming WithBearerToken", err)
	}
}
