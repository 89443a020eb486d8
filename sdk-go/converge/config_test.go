package converge

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// configCalls records OnConfig calls as "kind/version config".
type configCalls chan string

func (c configCalls) onConfig(kind string, version int, config json.RawMessage) {
	c <- fmt.Sprintf("%s/%d %s", kind, version, config)
	if strings.Contains(string(config), "panic") {
		panic("OnConfig test panic")
	}
}

// next returns the next call, failing if none comes.
func (c configCalls) next(t *testing.T) string {
	t.Helper()
	select {
	case s := <-c:
		return s
	case <-timeAfterWait():
		t.Fatal("OnConfig was not called")
		return ""
	}
}

func (c configCalls) expect(t *testing.T, want ...string) {
	t.Helper()
	for _, w := range want {
		if got := c.next(t); got != w {
			t.Fatalf("OnConfig call = %q; want %q", got, w)
		}
	}
}

func TestOnConfigSeesArrivalsChangesAndRemovals(t *testing.T) {
	f := newFakeServer(t)
	calls := make(configCalls, 16)
	logs := &syncBuffer{}
	w := newTestWorker(f, WithOnConfig(calls.onConfig), WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	w.Handle("greeting", 1, "reconcile", nop)
	w.Handle("greeting", 2, "reconcile", nop)
	w.run(t)
	s := f.accept(t)
	s.subscribed(t, nil, nil)

	// Arrival; an unserved kind and an absent config are not news.
	s.configs(t, kindConfig("other", 1, `{"x":1}`), kindConfig("greeting", 1, `{"region":"eu"}`), kindConfig("greeting", 2, ""))
	calls.expect(t, `greeting/1 {"region":"eu"}`)
	if got := string(w.DefaultConfig("greeting", 1)); got != `{"region":"eu"}` {
		t.Errorf("DefaultConfig(greeting, 1) = %q", got)
	}
	if got := w.DefaultConfig("other", 1); got != nil {
		t.Errorf("DefaultConfig of an unserved kind = %q; want nil", got)
	}
	w.DefaultConfig("greeting", 1)[2] = 'X' // the caller's copy
	if got := string(w.DefaultConfig("greeting", 1)); got != `{"region":"eu"}` {
		t.Errorf("DefaultConfig after changing a returned copy = %q", got)
	}

	// An unchanged config and an invalid one fire nothing: the next call
	// is greeting/2's. A panicking callback does not stop later calls.
	s.configs(t, kindConfig("greeting", 1, `{"region":"eu"}`))
	s.configs(t, kindConfig("greeting", 1, `[1]`))
	s.configs(t, kindConfig("greeting", 2, `{"panic":true}`))
	calls.expect(t, `greeting/2 {"panic":true}`)
	if got := string(w.DefaultConfig("greeting", 1)); got != `{"region":"eu"}` {
		t.Errorf("DefaultConfig after an invalid config = %q; want the last valid one", got)
	}
	eventually(t, "the invalid config is logged", func() bool {
		return strings.Contains(logs.String(), `configs[0] (kind \"greeting\" version 1): config must be a JSON object, got an array`)
	})

	// A change, then a removal.
	s.configs(t, kindConfig("greeting", 1, `{"region":"us"}`))
	calls.expect(t, `greeting/1 {"region":"us"}`)
	s.configs(t, kindConfig("greeting", 1, ""))
	calls.expect(t, `greeting/1 `)
	if got := w.DefaultConfig("greeting", 1); got != nil {
		t.Errorf("DefaultConfig after removal = %q; want nil", got)
	}

	// The first Configs on a new stream is the whole set: greeting/2,
	// which it does not name, has lost its default while the worker was
	// away; greeting/1 has gained one.
	s.close()
	s2 := f.accept(t)
	s2.subscribed(t, nil, nil)
	s2.configs(t, kindConfig("greeting", 1, `{"region":"ap"}`))
	calls.expect(t, `greeting/1 {"region":"ap"}`, `greeting/2 `)
	// Later messages name only what changed.
	s2.configs(t, kindConfig("greeting", 2, `{"zone":"b"}`))
	calls.expect(t, `greeting/2 {"zone":"b"}`)
	if got := string(w.DefaultConfig("greeting", 1)); got != `{"region":"ap"}` {
		t.Errorf("DefaultConfig(greeting, 1) after a partial update = %q; want it kept", got)
	}
	select {
	case c := <-calls:
		t.Errorf("unexpected OnConfig call %q", c)
	default:
	}
}

func TestOnConfigGetsTheLatestValue(t *testing.T) {
	f := newFakeServer(t)
	release := make(chan struct{})
	calls := make(configCalls, 16)
	w := newTestWorker(f, WithOnConfig(func(kind string, version int, config json.RawMessage) {
		calls.onConfig(kind, version, config)
		if string(config) == `{"n":1}` {
			<-release
		}
	}))
	w.Handle("greeting", 1, "reconcile", nop)
	w.run(t)
	s := f.accept(t)
	s.subscribed(t, nil, nil)
	s.configs(t, kindConfig("greeting", 1, `{"n":1}`))
	calls.expect(t, `greeting/1 {"n":1}`)
	// While the callback is busy, two more changes come; it then sees the
	// last only. A task runs meanwhile: the callback holds nothing up.
	s.configs(t, kindConfig("greeting", 1, `{"n":2}`))
	s.configs(t, kindConfig("greeting", 1, `{"n":3}`))
	eventually(t, "both changes are received", func() bool { return string(w.DefaultConfig("greeting", 1)) == `{"n":3}` })
	s.task(t, greetingTask(1, `{}`))
	if r := s.result(t); r.GetSuccess() == nil {
		t.Fatalf("result while OnConfig is busy = %v; want success", r)
	}
	close(release)
	calls.expect(t, `greeting/1 {"n":3}`)
}

func TestTaskConfigIsDecoded(t *testing.T) {
	f := newFakeServer(t)
	w := newTestWorker(f)
	w.Handle("greeting", 1, "reconcile", func(_ context.Context, task *Task) (*Result, error) {
		cfg := struct {
			Region string `json:"region"`
			Size   int    `json:"size"`
		}{Size: 1}
		if err := task.DecodeConfig(&cfg); err != nil {
			return nil, Terminal(err)
		}
		return &Result{Status: map[string]any{"seen": fmt.Sprintf("%s %d", cfg.Region, cfg.Size)}}, nil
	})
	w.run(t)
	s := f.accept(t)
	s.subscribed(t, nil, nil)

	cases := []struct{ config, want string }{
		{`{"region":"eu","size":3}`, `{"seen":"eu 3"}`},
		{``, `{"seen":" 1"}`}, // no config: the defaults stay
	}
	for i, c := range cases {
		task := greetingTask(int64(i+1), `{}`)
		task.Config = []byte(c.config)
		s.task(t, task)
		if r := s.result(t); string(r.GetSuccess().GetStatus()) != c.want {
			t.Errorf("config %q: result = %v; want status %s", c.config, r, c.want)
		}
	}

	task := greetingTask(9, `{}`)
	task.Config = []byte(`{"size":"big"}`)
	s.task(t, task)
	r := s.result(t)
	if e := r.GetError(); !e.GetTerminal() || !strings.Contains(e.GetMessage(), "decode config of greeting default/hello") {
		t.Fatalf("result for a mistyped config = %v; want a terminal error naming the config", r)
	}
}

func TestCheckConfig(t *testing.T) {
	for in, want := range map[string]string{
		``:         "",
		`null`:     "",
		` {"a":1}`: "",
		`{}`:       "",
		`[1]`:      "must be a JSON object, got an array",
		`"s"`:      "must be a JSON object, got a string",
		`{"a":`:    "is not valid JSON",
	} {
		err := checkConfig([]byte(in))
		if got := fmt.Sprint(err); (want == "" && err != nil) || (want != "" && got != want) {
			t.Errorf("checkConfig(%q) = %v; want %q", in, err, want)
		}
	}
	if hasConfig([]byte(" null ")) || hasConfig(nil) || !hasConfig([]byte("{}")) {
		t.Error("hasConfig: an absent config is one of no bytes or null; {} is a config")
	}
}
