package rpcvalidate_test

import (
	"errors"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/rpcvalidate"
)

func TestCheckNamesEveryField(t *testing.T) {
	v, err := rpcvalidate.New()
	if err != nil {
		t.Fatal(err)
	}
	err = v.Check(&convergev1.ApplyResourceRequest{Kind: "", Name: "Not_Valid", KindVersion: 0})
	var ce *connect.Error
	if !errors.As(err, &ce) || ce.Code() != connect.CodeInvalidArgument {
		t.Fatalf("err = %v, want InvalidArgument", err)
	}
	for _, field := range []string{"kind:", "name:", "kind_version:"} {
		if !strings.Contains(err.Error(), field) {
			t.Errorf("%q does not name %s", err, field)
		}
	}
	if err := v.Check(&convergev1.ApplyResourceRequest{Kind: "greeting", KindVersion: 1, Name: "ok"}); err != nil {
		t.Fatalf("valid request refused: %v", err)
	}
}

// TestMessagesReadAsEnglish checks the rewritten texts: each names the
// field by its proto name and says what the rule wants, in words, with
// singular and plural right.
func TestMessagesReadAsEnglish(t *testing.T) {
	v, err := rpcvalidate.New()
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("a", 254)
	for _, tc := range []struct {
		name string
		msg  proto.Message
		want []string
	}{
		{"empty required name", &convergev1.ApplyResourceRequest{Kind: "greeting", KindVersion: 1},
			[]string{"name: must not be empty"}},
		{"too long", &convergev1.ApplyResourceRequest{Kind: "greeting", KindVersion: 1, Name: long},
			[]string{"name: must be at most 253 characters (it is 254)"}},
		{"range", &convergev1.ApplyResourceRequest{Kind: "greeting", KindVersion: 40000, Name: "a"},
			[]string{"kind_version: must be at least 1 and at most 32767 (it is 40000)"}},
		{"lower bound only", &convergev1.ListResourcesRequest{KindVersion: -1},
			[]string{"kind_version: must be at least 0 (it is -1)"}},
		{"in with a default", &convergev1.ApplyResourceRequest{Kind: "greeting", KindVersion: 1, Name: "a", DeletionPolicy: "keep"},
			[]string{`deletion_policy: "keep" is not one of delete, retain (or leave it out for the default)`}},
		{"in", &convergev1.ListResourcesRequest{Phases: []string{"Broken"}},
			[]string{`phases[0]: "Broken" is not one of Deleting, Quarantined, Failed, Orphaned, Degraded, Ready, Reconciling`}},
		{"map key pattern", &convergev1.ApplyResourceRequest{Kind: "greeting", KindVersion: 1, Name: "a", Labels: map[string]string{"bad key": "x"}},
			[]string{`labels["bad key"]: key "bad key" does not match the pattern ^[A-Za-z0-9]`}},
		{"empty list", &convergev1.ApplyResourcesRequest{}, []string{"resources: must not be empty"}},
		{"namespace rule", &convergev1.ListResourcesRequest{Namespace: "Bad NS"},
			[]string{`namespace: "Bad NS" must be lower-case letters, digits or '-', starting and ending with a letter or digit`}},
		{"kind rule", &convergev1.GetResourceRequest{Kind: "Bad Kind", Name: "a"},
			[]string{`kind: "Bad Kind" must be lower-case words of letters and digits separated by '.' or '-'`}},
		{"name rule", &convergev1.GetResourceRequest{Kind: "greeting", Name: "Bad Name"},
			[]string{`name: "Bad Name" must be lower-case letters, digits, '.', '_' or '-'`}},
		{"required message", &convergev1.ApplyKindRequest{}, []string{"manifest: must be set"}},
	} {
		err := v.Check(tc.msg)
		if err == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		for _, want := range tc.want {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %q does not contain %q", tc.name, err, want)
			}
		}
		for _, bad := range []string{"1 characters", "item(s)", "regex", "must be in list"} {
			if strings.Contains(err.Error(), bad) {
				t.Errorf("%s: %q still says %q", tc.name, err, bad)
			}
		}
	}
}

// TestEmptyFiltersPass: the naming rules admit an empty filter ("any").
func TestEmptyFiltersPass(t *testing.T) {
	v, err := rpcvalidate.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []proto.Message{
		&convergev1.ListResourcesRequest{},
		&convergev1.ListResourcesRequest{Namespace: "team-a", Kind: "aws.vpc"},
		&convergev1.WatchRequest{Namespace: "default", Kind: "greeting", Name: "hello-world"},
		&convergev1.GetResourceRequest{Kind: "greeting", Name: "a.b_c-1"},
	} {
		if err := v.Check(m); err != nil {
			t.Errorf("%v refused: %v", m, err)
		}
	}
}
