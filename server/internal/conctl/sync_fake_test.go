package conctl_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/sdk-go/gen/converge/v1/convergev1connect"
)

// selectorFake is the conctl tests' fake server with label selectors:
// ListResources honours key=value terms, which sync's scope listing uses.
type selectorFake struct{ *fakeControl }

// newSelectorFake serves a fakeControl through selectorFake.
func newSelectorFake(t *testing.T) (*fakeControl, string) {
	t.Helper()
	f, _ := newFake(t)
	mux := http.NewServeMux()
	mux.Handle(convergev1connect.NewControlServiceHandler(selectorFake{f}))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return f, srv.URL
}

func (s selectorFake) ListResources(ctx context.Context, req *convergev1.ListResourcesRequest) (*convergev1.ListResourcesResponse, error) {
	if req.LabelSelector == "" {
		return s.fakeControl.ListResources(ctx, req)
	}
	want := map[string]string{}
	for _, term := range strings.Split(req.LabelSelector, ",") {
		k, v, ok := strings.Cut(term, "=")
		if !ok {
			return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("label_selector: the fake knows key=value only, got %q", term))
		}
		want[k] = v
	}
	f := s.fakeControl
	f.mu.Lock()
	defer f.mu.Unlock()
	f.listReqs = append(f.listReqs, proto.CloneOf(req))
	var keys []string
	for k, r := range f.resources {
		if (req.Namespace == "" || req.Namespace == r.Namespace) && (req.Kind == "" || req.Kind == r.Kind) && labelsMatch(r.Labels, want) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	from := 0
	if req.PageToken != "" {
		from, _ = strconv.Atoi(req.PageToken)
	}
	size := int(req.PageSize)
	if size == 0 || size > f.maxPage {
		size = f.maxPage
	}
	resp := &convergev1.ListResourcesResponse{}
	for _, k := range keys[min(from, len(keys)):min(from+size, len(keys))] {
		resp.Resources = append(resp.Resources, proto.CloneOf(f.resources[k]))
	}
	if from+size < len(keys) {
		resp.NextPageToken = strconv.Itoa(from + size)
	}
	return resp, nil
}

func labelsMatch(labels, want map[string]string) bool {
	for k, v := range want {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// writeSyncTree writes files (path relative to a new directory: content) and
// returns the directory.
func writeSyncTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
