package maintenance

import (
	"errors"
	"testing"
	"time"
)

// TestBatched: a full batch asks for another, a short one or a failure
// ends the pass.
func TestBatched(t *testing.T) {
	for _, c := range []struct {
		name  string
		steps []int
		fail  int // step index that fails, -1 for none
		calls int
	}{
		{"short first batch", []int{3}, -1, 1},
		{"full batches then a short one", []int{10, 10, 0}, -1, 3},
		{"a failure ends it", []int{10, 10, 10}, 1, 2},
	} {
		calls := 0
		batched(10, func() (int, error) {
			i := calls
			calls++
			if i == c.fail {
				return 0, errors.New("boom")
			}
			return c.steps[i], nil
		})
		if calls != c.calls {
			t.Errorf("%s: %d calls, want %d", c.name, calls, c.calls)
		}
	}
}

func TestConfigDefaults(t *testing.T) {
	got := Config{TrimInterval: time.Minute}.WithDefaults()
	want := Config{ReapInterval: time.Second, TrimInterval: time.Minute, ChangeRetention: time.Hour}
	if got != want {
		t.Fatalf("defaults = %+v, want %+v", got, want)
	}
}
