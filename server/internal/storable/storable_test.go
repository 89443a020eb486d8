package storable_test

import (
	"math"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/storable"
)

func TestMessageNamesWhatCannotBeStored(t *testing.T) {
	spec, _ := structpb.NewStruct(map[string]any{"a": map[string]any{"b": []any{"ok", "x\x00y"}}})
	keyed, _ := structpb.NewStruct(map[string]any{"k\x00": 1})
	for _, c := range []struct {
		msg     *convergev1.ApplyResourceRequest
		path    string
		whySays string
	}{
		{&convergev1.ApplyResourceRequest{Name: "a\x00"}, "name", "NUL"},
		{&convergev1.ApplyResourceRequest{Labels: map[string]string{"team": "x\x00"}}, `labels["team"]`, "NUL"},
		{&convergev1.ApplyResourceRequest{Labels: map[string]string{"t\x00": "x"}}, `labels["t\x00"] (key)`, "NUL"},
		{&convergev1.ApplyResourceRequest{Spec: spec}, "spec.a.b[1]", "NUL"},
		{&convergev1.ApplyResourceRequest{Spec: keyed}, `spec["k\x00"] (key)`, "NUL"},
		{&convergev1.ApplyResourceRequest{Spec: &structpb.Struct{Fields: map[string]*structpb.Value{"n": structpb.NewNumberValue(math.NaN())}}}, "spec.n", "finite"},
	} {
		path, why := storable.Message(c.msg)
		if path != c.path || !strings.Contains(why, c.whySays) {
			t.Errorf("%v: got %q, %q; want %q saying %q", c.msg, path, why, c.path, c.whySays)
		}
	}
	ok, _ := structpb.NewStruct(map[string]any{"a": "b", "n": 1.5})
	if path, why := storable.Message(&convergev1.ApplyResourceRequest{Name: "a", Spec: ok, Labels: map[string]string{"a": "b"}}); why != "" {
		t.Errorf("a storable message was refused at %s: %s", path, why)
	}
}

func TestJSONNamesWhatCannotBeStored(t *testing.T) {
	doc := map[string]any{"a": []any{map[string]any{"b": "\x00"}}}
	if path, why := storable.JSON(doc, "status"); path != "status.a[0].b" || !strings.Contains(why, "NUL") {
		t.Errorf("got %q, %q", path, why)
	}
	if _, why := storable.JSON(map[string]any{"a": "b"}, "status"); why != "" {
		t.Errorf("a storable document was refused: %s", why)
	}
}
