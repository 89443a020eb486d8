package flow_test

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/convergehq/converge/server/internal/flow"
)

// A VPC depends on an account: its spec gets the account's id, and a
// subnet CIDR computed from the account's status.
func Example() {
	account := map[string]any{
		"account_id": "acct-42",
		"cidr_base":  "10.42",
	}
	vpc := map[string]any{"name": "web"}

	var writes []flow.Write
	for _, f := range [][3]string{
		{"/account_id", "", "/account_id"},
		{"", `status.cidr_base + ".0.0/16"`, "/network/cidr"},
	} {
		p, err := flow.Compile(f[0], f[1], f[2])
		if err != nil {
			fmt.Println(err)
			return
		}
		v, err := p.Eval(account, nil)
		if err != nil {
			fmt.Println(err)
			return
		}
		writes = append(writes, flow.Write{To: p.To(), Value: v})
	}
	spec, changed, err := flow.Apply(vpc, writes)
	if err != nil {
		fmt.Println(err)
		return
	}
	out, _ := json.Marshal(spec)
	fmt.Println(string(out), changed)
	// The same values again change nothing.
	_, changed, _ = flow.Apply(spec, writes)
	fmt.Println(changed)
	// Output:
	// {"account_id":"acct-42","name":"web","network":{"cidr":"10.42.0.0/16"}} true
	// false
}

func ExampleCompile() {
	_, err := flow.Compile("", "status.cidr +\n  suffix(24)", "network/cidr")
	fmt.Println(err)
	// Output:
	// expr:2:9: undeclared reference to 'suffix' (in container '')
	// to: pointer "network/cidr" must start with "/" (or be "" for the whole document)
}

func ExampleProgram_Eval() {
	p, _ := flow.Compile("", `status.vpc.id + ":" + string(status.vpc.port + 1)`, "/endpoint")

	_, err := p.Eval(map[string]any{"vpc": map[string]any{}}, nil)
	fmt.Println(errors.Is(err, flow.ErrMissing), err)

	status := map[string]any{"vpc": map[string]any{"id": "vpc-1", "port": json.Number("8080")}}
	v, err := p.Eval(status, nil)
	fmt.Println(v, err)

	_, err = p.Eval(map[string]any{"vpc": map[string]any{"id": "vpc-1", "port": "http"}}, nil)
	var ee *flow.EvalError
	fmt.Println(errors.As(err, &ee), err)
	// Output:
	// true status has no /vpc/id yet
	// vpc-1:8081 <nil>
	// true expr "status.vpc.id + \":\" + string(status.vpc.port + 1)" at 1:46: no such overload
}

func ExamplePointer_Set() {
	p, _ := flow.ParsePointer("/network/subnets/-")
	doc := map[string]any{"network": map[string]any{"subnets": []any{"a"}}}
	out, err := p.Set(doc, "b")
	fmt.Println(out, err)
	fmt.Println(doc) // unchanged
	// Output:
	// map[network:map[subnets:[a b]]] <nil>
	// map[network:map[subnets:[a]]]
}

func ExampleCache() {
	cache := flow.NewCache(10_000)
	p1, _ := cache.Compile("", "status.id", "/id")
	p2, _ := cache.Compile("", "status.id", "/id")
	fmt.Println(p1 == p2)
	// Output:
	// true
}
