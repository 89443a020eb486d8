package app_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"connectrpc.com/connect"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/conctl"
)

// TestFiltersAreCheckedLikeApply: a namespace, kind or name that apply
// would refuse is refused as a filter too, naming the field and the
// allowed form, rather than answering an empty list or NotFound; over
// Connect, REST and conctl alike.
func TestFiltersAreCheckedLikeApply(t *testing.T) {
	base, ctl, _ := server(t)
	applyGreeting(t, ctl)
	ctx := context.Background()
	const nsForm = `"Bad NS" must be lower-case letters, digits or '-', starting and ending with a letter or digit`
	for _, tc := range []struct {
		name string
		call func() error
		want string
	}{
		{"list namespace", func() error {
			_, err := ctl.ListResources(ctx, &convergev1.ListResourcesRequest{Namespace: "Bad NS"})
			return err
		}, "namespace: " + nsForm},
		{"list kind", func() error {
			_, err := ctl.ListResources(ctx, &convergev1.ListResourcesRequest{Kind: "Greeting"})
			return err
		}, `kind: "Greeting" must be lower-case words`},
		{"list label key", func() error {
			_, err := ctl.ListResources(ctx, &convergev1.ListResourcesRequest{LabelSelector: "é=1"})
			return err
		}, `label_selector: label selector term "é=1": label key "é"`},
		{"count namespace", func() error {
			_, err := ctl.CountResources(ctx, &convergev1.CountResourcesRequest{Namespace: "Bad NS"})
			return err
		}, "namespace: " + nsForm},
		{"get name", func() error {
			_, err := ctl.GetResource(ctx, &convergev1.GetResourceRequest{Kind: "greeting", Name: "Bad Name"})
			return err
		}, `name: "Bad Name" must be lower-case letters`},
		{"events namespace", func() error {
			_, err := ctl.ListEvents(ctx, &convergev1.ListEventsRequest{Namespace: "Bad NS"})
			return err
		}, "namespace: " + nsForm},
	} {
		err := tc.call()
		if code(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want InvalidArgument containing %q", tc.name, err, tc.want)
		}
	}
	if _, err := ctl.ListResources(ctx, &convergev1.ListResourcesRequest{Namespace: "team-a", Kind: "greeting"}); err != nil {
		t.Errorf("valid filters refused: %v", err)
	}

	for _, path := range []string{"/api/v1/resources?namespace=Bad%20NS", "/api/v1/namespaces/Bad%20NS/resources/greeting/x"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !bytes.Contains(body, []byte("namespace: ")) ||
			!bytes.Contains(body, []byte("must be lower-case letters, digits or '-'")) {
			t.Errorf("GET %s: %d %s; want 400 naming namespace and its form", path, resp.StatusCode, body)
		}
	}

	var out, errOut bytes.Buffer
	code := conctl.Run(ctx, []string{"--server", base, "list", "resources", "-n", "Bad NS"},
		conctl.WithStdio(strings.NewReader(""), &out, &errOut))
	if code != 1 || !strings.Contains(errOut.String(), "namespace: "+nsForm) {
		t.Errorf("conctl list -n 'Bad NS': exit %d, stdout %q, stderr %q; want 1 and the namespace rule", code, out.String(), errOut.String())
	}
}
