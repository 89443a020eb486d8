package client

import (
	"context"
	"testing"

	"connectrpc.com/connect"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// A client sends back the greatest token it has been answered with, and
// leaves a token the caller set alone.
func TestReadAfterSendsTheLatestToken(t *testing.T) {
	ra := &readAfter{}
	var sent []string
	answer := ""
	call := ra.WrapUnary(func(_ context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		sent = append(sent, req.Header().Get(ReadAfterHeader))
		resp := connect.NewResponse(&convergev1.GetResourceResponse{})
		if answer != "" {
			resp.Header().Set(ReadAfterHeader, answer)
		}
		return resp, nil
	})
	do := func(answerWith string) {
		answer = answerWith
		if _, err := call(context.Background(), connect.NewRequest(&convergev1.GetResourceRequest{})); err != nil {
			t.Fatal(err)
		}
	}
	do("00000000000000a0") // a write
	do("")                 // a read the replica served
	do("0000000000000090") // an older token, from a call that overlapped
	do("bogus")            // not a token of this width
	do("")
	want := []string{"", "00000000000000a0", "00000000000000a0", "00000000000000a0", "00000000000000a0"}
	for i := range want {
		if sent[i] != want[i] {
			t.Fatalf("call %d sent %q; want %q (all sent: %q)", i, sent[i], want[i], sent)
		}
	}
	req := connect.NewRequest(&convergev1.GetResourceRequest{})
	req.Header().Set(ReadAfterHeader, "0000000000000001")
	if _, err := call(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if got := sent[len(sent)-1]; got != "0000000000000001" {
		t.Errorf("the caller's own token was replaced by %q", got)
	}
}
