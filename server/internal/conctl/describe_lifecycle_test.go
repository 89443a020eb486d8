package conctl_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

func TestDescribeShowsProviderConfigAndLastOperations(t *testing.T) {
	f, url := newFake(t)
	res := sampleResource()
	res.ProviderConfig = "eu"
	f.add(res)
	for i := range 7 {
		f.addOperation(&convergev1.Operation{
			Id: fmt.Sprintf("op-%d", i), Verb: "snapshot", State: "succeeded", Actor: "api:alice",
			Resource:    &convergev1.ResourceRef{Namespace: "default", Kind: "greeting", Name: "hello-world"},
			RequestedAt: timestamppb.New(testNow.Add(-time.Duration(70-10*i) * time.Minute)),
		})
	}
	r := run(testContext(t), url, "", "describe", "resource", "greeting/hello-world")
	if r.code != 0 {
		t.Fatalf("exit %d, stderr %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "Updated:            2026-11-29T11:55:00Z (5m ago)\nProvider config:    eu\nPhase:") {
		t.Errorf("no provider config line after Updated:\n%s", r.stdout)
	}
	want := "" +
		"Operations (last 5, oldest first):\n" +
		"  ID     VERB       STATE       AGE   ACTOR       MESSAGE\n" +
		"  op-2   snapshot   succeeded   50m   api:alice   -\n" +
		"  op-3   snapshot   succeeded   40m   api:alice   -\n" +
		"  op-4   snapshot   succeeded   30m   api:alice   -\n" +
		"  op-5   snapshot   succeeded   20m   api:alice   -\n" +
		"  op-6   snapshot   succeeded   10m   api:alice   -\n" +
		"Events:             <none>\n"
	if !strings.HasSuffix(r.stdout, want) {
		t.Errorf("describe does not end with the last operations and events:\n%s\nwant the end:\n%s", r.stdout, want)
	}
}

func TestDescribeWithoutOperations(t *testing.T) {
	f, url := newFake(t)
	f.add(sampleResource())
	ctx := testContext(t)
	r := run(ctx, url, "", "describe", "resource", "greeting/hello-world")
	if r.code != 0 || strings.Contains(r.stdout, "Operations") || strings.Contains(r.stdout, "Provider config") {
		t.Fatalf("exit %d: a resource without operations or a config shows neither:\n%s", r.code, r.stdout)
	}

	f.failing("ListOperations", connect.CodeInternal, "operations table unreadable")
	r = run(ctx, url, "", "describe", "resource", "greeting/hello-world")
	if r.code != 0 || !strings.Contains(r.stdout, "Operations:         could not be listed: operations table unreadable\n") {
		t.Fatalf("exit %d: a failed listing is shown, the rest still printed:\n%s", r.code, r.stdout)
	}

	f.failing("ListOperations", connect.CodeUnimplemented, "")
	r = run(ctx, url, "", "describe", "resource", "greeting/hello-world")
	if r.code != 0 || strings.Contains(r.stdout, "Operations") {
		t.Fatalf("exit %d: a server without operations has none to show:\n%s", r.code, r.stdout)
	}
}
