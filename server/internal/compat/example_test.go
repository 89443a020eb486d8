package compat_test

import (
	"encoding/json"
	"fmt"

	"github.com/convergehq/converge/server/internal/compat"
)

func ExampleCheck() {
	var old, new any
	_ = json.Unmarshal([]byte(`{
	  "type": "object",
	  "properties": {
	    "protocol": {"enum": ["TCP", "UDP"]},
	    "port": {"type": "integer", "minimum": 1}
	  }
	}`), &old)
	_ = json.Unmarshal([]byte(`{
	  "type": "object",
	  "required": ["port"],
	  "properties": {
	    "protocol": {"enum": ["TCP"]},
	    "port": {"type": "integer", "minimum": 1},
	    "host": {"type": "string"}
	  }
	}`), &new)
	changes, err := compat.Check(old, new)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range changes {
		fmt.Println(c)
	}
	// Output:
	// /port: newly-required: "port" is now required
	// /protocol: enum-restricted: enum was ["TCP","UDP"], now ["TCP"]: "UDP" no longer accepted
}
