package compat

import (
	"encoding/json"
	"math/rand"
	"testing"

	"github.com/convergehq/converge/server/internal/schema"
)

// soundness checks one random pair: if the strict comparison reports
// nothing, no instance valid under old may be invalid under new; and a
// schema compared with an annotated copy of itself reports nothing.
func soundness(t *testing.T, seed int64) {
	g := &gen{r: rand.New(rand.NewSource(seed))}
	old := g.root()
	var new any
	if g.pick(4) == 0 {
		new = g.root()
	} else {
		new = g.mutate(old, 0)
	}
	oldS, err1 := schema.Compile("old", old)
	newS, err2 := schema.Compile("new", new)
	if err1 != nil || err2 != nil {
		return
	}
	n := 0
	if cs := compareDocs(old, annotate(old, &n), options{}); len(cs) > 0 {
		t.Fatalf("seed %d: schema against an annotated copy of itself: %q\nschema: %s", seed, lines(cs), js(old))
	}
	cs := compareDocs(old, new, options{strict: true})
	if _, err := Check(old, new); err != nil {
		t.Fatalf("seed %d: Check: %v", seed, err)
	}
	if len(cs) > 0 {
		return
	}
	for range 300 {
		v := g.value(3)
		if oldS.Validate(v) == nil && newS.Validate(v) != nil {
			t.Fatalf("seed %d: nothing reported, but %s is valid under old and not under new (%v)\nold: %s\nnew: %s",
				seed, js(v), newS.Validate(v), js(old), js(new))
		}
	}
}

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestSoundnessRandom runs a fixed set of random pairs on every test run.
func TestSoundnessRandom(t *testing.T) {
	n := int64(3000)
	if testing.Short() {
		n = 300
	}
	for seed := range n {
		soundness(t, seed)
	}
}

// FuzzCheck explores more seeds under "go test -fuzz=FuzzCheck".
func FuzzCheck(f *testing.F) {
	for seed := range int64(20) {
		f.Add(seed * 7919)
	}
	f.Fuzz(soundness)
}
