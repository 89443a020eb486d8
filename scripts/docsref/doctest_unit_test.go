package main

import (
	"strings"
	"testing"
)

func TestParseSteps(t *testing.T) {
	page := "# T\n\n<!-- test: run -->\n```sh\necho hi\n```\n\n<!-- test: output -->\n```text\nhi\n```\n\n" +
		"```sh\nnot run\n```\n<!-- test: start srv -->\n```sh\nserver\n```\n<!-- test: run, fails -->\n```sh\nfalse\n```\n" +
		"Stop it.\n<!-- test: stop srv -->\n<!-- test: start srv -->\n```sh\nserver -x\n```\n" +
		"<!-- test: file a/b.go -->\n```go\npackage b\n```\n"
	steps, err := parseSteps(page)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range steps {
		got = append(got, s.kind+":"+s.name+":"+s.body+":"+map[bool]string{true: "fails", false: "ok"}[s.fails])
	}
	want := []string{"run::echo hi:ok", "output::hi:ok", "start:srv:server:ok", "run::false:fails", "stop:srv::ok", "start:srv:server -x:ok", "file:a/b.go:package b:ok"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("steps = %q, want %q", got, want)
	}
}

func TestParseStepsRejectsBadMarkers(t *testing.T) {
	for name, page := range map[string]string{
		"unknown marker":    "<!-- test: jump -->\n```sh\nx\n```\n",
		"marker and prose":  "<!-- test: run -->\nsome text\n```sh\nx\n```\n",
		"unclosed fence":    "<!-- test: run -->\n```sh\nx\n",
		"stop without name": "<!-- test: stop -->\n",
		"file without path": "<!-- test: file -->\n```go\nx\n```\n",
		"marker then stop":  "<!-- test: run -->\n<!-- test: stop srv -->\n```sh\nx\n```\n",
	} {
		if _, err := parseSteps(page); err == nil {
			t.Errorf("%s: parseSteps accepted %q", name, page)
		}
	}
}

func TestMatchOutput(t *testing.T) {
	got := "resource default/greeting/a created\nwaiting: 0/1 ready\nwaiting: 1/1 ready\n1 of 1 resources ready\n" +
		"NAME    PHASE   AGE\nhello   Ready   3s\n"
	for _, want := range []string{
		"resource default/greeting/a created\n...\n1 of 1 resources ready",
		"NAME PHASE AGE\nhello   Ready ...",
		"waiting: ...ready",
	} {
		if err := matchOutput(want, got); err != nil {
			t.Errorf("matchOutput(%q) = %v, want a match", want, err)
		}
	}
	for _, want := range []string{
		"1 of 1 resources ready\nresource default/greeting/a created", // out of order
		"hello Ready", // the line goes on: needs a trailing ...
		"resource default/greeting/b created",
		"NAME PHASE AGE\nhello Failed ...",
	} {
		if err := matchOutput(want, got); err == nil {
			t.Errorf("matchOutput(%q) matched, want a mismatch", want)
		}
	}
}
