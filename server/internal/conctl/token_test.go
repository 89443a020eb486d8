package conctl_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/convergehq/converge/server/internal/conctl"
)

// TestBearerToken checks that --token, or CONVERGE_TOKEN, is sent as a
// bearer token with every call, and that the flag wins over the variable.
func TestBearerToken(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("Authorization"))
		mu.Unlock()
		http.Error(w, `{"code":"permission_denied","message":"no"}`, http.StatusForbidden)
	}))
	defer srv.Close()
	cases := []struct {
		env  map[string]string
		args []string
		want string
	}{
		{map[string]string{}, nil, ""},
		{map[string]string{"CONVERGE_TOKEN": "from-env"}, nil, "Bearer from-env"},
		{map[string]string{"CONVERGE_TOKEN": "from-env"}, []string{"--token", "from-flag"}, "Bearer from-flag"},
	}
	for _, c := range cases {
		mu.Lock()
		got = nil
		mu.Unlock()
		c.env["CONVERGE_SERVER"] = srv.URL
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var out, errOut strings.Builder
		conctl.Run(ctx, append(c.args, "list", "kinds"),
			conctl.WithStdio(strings.NewReader(""), &out, &errOut),
			conctl.WithGetenv(func(k string) string { return c.env[k] }),
			conctl.WithTerminal(false))
		cancel()
		mu.Lock()
		if len(got) == 0 || got[0] != c.want {
			t.Errorf("env %v, args %v: Authorization %q, want %q", c.env, c.args, got, c.want)
		}
		mu.Unlock()
	}
}
