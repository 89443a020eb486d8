package flow

import (
	"testing"
)

func BenchmarkEval(b *testing.B) {
	status := decode(b, `{"account_id": "acct-1", "cidr": "10.0.0.0", "subnets": [
		{"id": "s-1", "zone": "a"}, {"id": "s-2", "zone": "b"}, {"id": "s-3", "zone": "c"}]}`)
	spec := decode(b, `{"name": "web"}`)
	for _, bm := range []struct{ name, from, expr string }{
		{"pointer", "/account_id", ""},
		{"field", "", `status.cidr + "/24"`},
		{"loop", "", `status.subnets.map(s, s.zone + "/" + s.id)`},
	} {
		p := mustCompile(b, bm.from, bm.expr, "/x")
		b.Run(bm.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := p.Eval(status, spec); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkApplyUnchanged(b *testing.B) {
	spec := decode(b, `{"name": "web", "network": {"cidr": "10.0.0.0/24", "account_id": "acct-1"}}`)
	writes := []Write{write(b, "/network/cidr", "10.0.0.0/24"), write(b, "/network/account_id", "acct-1")}
	for b.Loop() {
		if _, changed, err := Apply(spec, writes); err != nil || changed {
			b.Fatal(changed, err)
		}
	}
}

func BenchmarkCacheHit(b *testing.B) {
	c := NewCache(100)
	c.Compile("", `status.cidr + "/24"`, "/x")
	for b.Loop() {
		if _, err := c.Compile("", `status.cidr + "/24"`, "/x"); err != nil {
			b.Fatal(err)
		}
	}
}
