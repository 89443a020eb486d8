package rpcvalidate_test

import (
	"errors"
	"strings"
	"testing"

	"connectrpc.com/connect"

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
