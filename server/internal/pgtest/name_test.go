package pgtest

import (
	"strings"
	"testing"
)

func TestDBNames(t *testing.T) {
	long := "TestX/" + strings.Repeat("y", 80)
	a, b := dbName(long), dbName(long)
	if a == b {
		t.Errorf("two names for one test are both %q", a)
	}
	for _, n := range []string{a, b} {
		if len(n) > 63 {
			t.Errorf("name %q is %d bytes; PostgreSQL keeps 63", n, len(n))
		}
		if strings.Trim(n, "abcdefghijklmnopqrstuvwxyz0123456789_") != "" {
			t.Errorf("name %q has characters that need quoting", n)
		}
	}
	if n := dbName("TestFoo/Bar"); !strings.HasSuffix(n, "_testfoo_bar") {
		t.Errorf("dbName(TestFoo/Bar) = %q, want it to end in _testfoo_bar", n)
	}
}
