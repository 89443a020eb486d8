package flow

import (
	"fmt"
	"testing"
)

func TestScratch2(t *testing.T) {
	env, _ := celEnv()
	for _, src := range []string{`status.l.sort()`, `status.l.join(",")`, `status.s.split(",")`, `status.s.matches("^a")`, `status.l.exists(x, x == "a")`, `"a" in status.l`, `status.m.map(k, status.m[k])`, `status.l.map(x, x.a + "-" + x.b)`, `status.l.filter(x, x.ready).map(x, x.id)`, `size(status.l)`, `status.l.map(x, string(x))`, `status.s.lowerAscii()`, `base64.encode(bytes(status.s))`, `status.l.sortBy(x, x.name)`, `status.l.map(x, {"id": x.id, "name": x.name, "zone": x.zone, "cidr": x.cidr})`, `status.l.filter(s, s.public).map(s, s.id).join(",")`, `status.subnets.map(s, s.id)[0]`, `status.l.map(x, x.name).join(",").split(",")`, `sets.contains(status.a, status.b)`, `status.l.exists(x, x in status.m)`, `status.l + spec.l`, `status.l.map(x, status.s)`, `status.tags.map(k, k + "=" + status.tags[k])`} {
		ast, iss := env.Compile(src)
		if iss.Err() != nil {
			fmt.Println(src, iss.Err())
			continue
		}
		est, err := env.EstimateCost(ast, inputSizes{})
		fmt.Printf("%-70s %e %v ok=%v\n", src, float64(est.Max), err, est.Max <= MaxEstimatedCost)
	}
}
