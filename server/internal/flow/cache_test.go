package flow

import (
	"errors"
	"fmt"
	"sync"
	"testing"
)

func TestCacheHits(t *testing.T) {
	c := NewCache(10)
	a1, err := c.Compile("", "status.a", "/a")
	if err != nil {
		t.Fatal(err)
	}
	a2, _ := c.Compile("", "status.a", "/a")
	if a1 != a2 {
		t.Error("the same flow compiled twice; want the cached program")
	}
	if b, _ := c.Compile("", "status.a", "/b"); b == a1 {
		t.Error("a flow with another target shares a program")
	}
	if f, _ := c.Compile("/a", "", "/a"); f == a1 {
		t.Error("a pointer flow shares a CEL flow's program")
	}
	_, err1 := c.Compile("", "status.", "/a")
	_, err2 := c.Compile("", "status.", "/a")
	var ce *CompileError
	if !errors.As(err1, &ce) || err1 != err2 {
		t.Errorf("compile errors = %v, %v; want the same cached *CompileError", err1, err2)
	}
}

func TestCacheEvictsLeastRecentlyUsed(t *testing.T) {
	c := NewCache(2)
	a, _ := c.Compile("/a", "", "/x")
	b, _ := c.Compile("/b", "", "/x")
	if again, _ := c.Compile("/a", "", "/x"); again != a { // a is now the most recent
		t.Fatal("a was not cached")
	}
	c.Compile("/c", "", "/x") // evicts b
	if again, _ := c.Compile("/a", "", "/x"); again != a {
		t.Error("the recently used flow was evicted")
	}
	if again, _ := c.Compile("/b", "", "/x"); again == b {
		t.Error("the least recently used flow was kept past the size")
	}
	if n := len(c.items); n != 2 || c.order.Len() != 2 {
		t.Errorf("cache holds %d entries (%d in order), want 2", n, c.order.Len())
	}
}

func TestCacheSizeAtLeastOne(t *testing.T) {
	c := NewCache(0)
	a, _ := c.Compile("/a", "", "/x")
	if again, _ := c.Compile("/a", "", "/x"); again != a {
		t.Error("NewCache(0) caches nothing; want one entry")
	}
}

func TestCacheConcurrent(t *testing.T) {
	c := NewCache(100)
	const goroutines, flows = 8, 20
	got := make([][]*Program, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[g] = make([]*Program, flows)
			for i := range flows {
				p, err := c.Compile("", fmt.Sprintf("status.f%d + %d", i, g%2), "/x")
				if err != nil {
					t.Error(err)
					return
				}
				got[g][i] = p
			}
		}()
	}
	wg.Wait()
	for g := 2; g < goroutines; g++ {
		for i := range flows {
			if got[g][i] != got[g%2][i] {
				t.Errorf("goroutines %d and %d got different programs for flow %d", g, g%2, i)
			}
		}
	}
}
