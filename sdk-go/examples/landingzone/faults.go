package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/convergehq/converge/sdk-go/converge"
)

// fault makes tasks of one kind fail terminally when their resource's name
// contains a substring.
type fault struct {
	kind, substring, message string
}

// faults is the repeatable -fail flag.
type faults []fault

// String implements flag.Value.
func (f *faults) String() string {
	parts := make([]string, len(*f))
	for i, x := range *f {
		parts[i] = x.kind + ":" + x.substring + ":" + x.message
	}
	return strings.Join(parts, ",")
}

// Set implements flag.Value: it parses KIND:NAME-SUBSTRING:MESSAGE. The
// message may contain ':'; an empty substring matches every name.
func (f *faults) Set(v string) error {
	kind, rest, ok1 := strings.Cut(v, ":")
	substring, message, ok2 := strings.Cut(rest, ":")
	switch {
	case !ok1 || !ok2:
		return errors.New("want KIND:NAME-SUBSTRING:MESSAGE, e.g. vpc:vpc-1:quota exceeded")
	case kind != kindZone && kind != kindAccount && kind != kindVPC && kind != kindRoute:
		return fmt.Errorf("kind %q: this worker serves %s, %s, %s and %s", kind, kindZone, kindAccount, kindVPC, kindRoute)
	case message == "":
		return errors.New("MESSAGE must not be empty")
	}
	*f = append(*f, fault{kind: kind, substring: substring, message: message})
	return nil
}

// check returns the terminal error of the first fault matching t, or nil.
func (f faults) check(t *converge.Task) error {
	for _, x := range f {
		if x.kind == t.Kind && strings.Contains(t.Name, x.substring) {
			return converge.Terminal(errors.New(x.message))
		}
	}
	return nil
}
