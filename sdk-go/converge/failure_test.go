package converge

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"buf.build/go/protovalidate"
)

func TestReasonAndRetryAfterWrapAndCompose(t *testing.T) {
	base := io.ErrUnexpectedEOF
	err := Terminal(Reason("InvalidRegion", base))
	if !IsTerminal(err) || ReasonOf(err) != "InvalidRegion" || !errors.Is(err, base) || err.Error() != base.Error() {
		t.Fatalf("Terminal(Reason(...)): terminal %v, reason %q, is %v, message %q", IsTerminal(err), ReasonOf(err), errors.Is(err, base), err)
	}
	err = RetryAfter(time.Minute, Reason("Throttled", base))
	if d, ok := RetryAfterOf(err); !ok || d != time.Minute || ReasonOf(err) != "Throttled" || IsTerminal(err) {
		t.Fatalf("RetryAfter(Reason(...)): after %v %v, reason %q, terminal %v", d, ok, ReasonOf(err), IsTerminal(err))
	}
	if ReasonOf(Reason("Outer", Reason("Inner", base))) != "Outer" {
		t.Fatal("the outermost Reason should win")
	}
	if _, ok := RetryAfterOf(base); ok || ReasonOf(base) != "" {
		t.Fatal("a plain error has neither a reason nor a retry-after")
	}
	if Reason("X", nil) != nil || RetryAfter(time.Second, nil) != nil {
		t.Fatal("wrapping nil must give nil")
	}
}

// The reason and retry-after travel on the failure; a bad one is a
// terminal failure naming the rule and keeping the handler's message.
func TestFailureResults(t *testing.T) {
	boom := errors.New("boom")
	cases := []struct {
		name       string
		err        error
		terminal   bool
		reason     string
		retryAfter time.Duration
		contains   string
	}{
		{"reason", Reason("QuotaExceeded", boom), false, "QuotaExceeded", 0, "boom"},
		{"terminal reason", Terminal(Reason("InvalidRegion", boom)), true, "InvalidRegion", 0, "boom"},
		{"reason outside terminal", Reason("InvalidRegion", Terminal(boom)), true, "InvalidRegion", 0, "boom"},
		{"retry after", RetryAfter(90*time.Second, Reason("Throttled", boom)), false, "Throttled", 90 * time.Second, "boom"},
		{"retry after a day", RetryAfter(24*time.Hour, boom), false, "", 24 * time.Hour, "boom"},
		{"lower-case reason", Reason("quotaExceeded", boom), true, "", 0, "reason: does not match regex pattern"},
		{"reason with a space", Reason("Quota Exceeded", boom), true, "", 0, "reason"},
		{"long reason", Reason("A"+strings.Repeat("b", 63), boom), true, "", 0, "reason"},
		{"zero retry after", RetryAfter(0, boom), true, "", 0, "retry_after"},
		{"retry after more than a day", RetryAfter(24*time.Hour+time.Second, boom), true, "", 0, "retry_after"},
		{"terminal retry after", Terminal(RetryAfter(time.Minute, boom)), true, "", 0, "retry_after is for transient failures"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep := buildResult(greetingTask(1, `{}`), nil, c.err)
			if err := protovalidate.Validate(rep.result); err != nil {
				t.Fatalf("the result breaks the protocol: %v", err)
			}
			f := rep.result.GetError()
			if f.GetTerminal() != c.terminal || f.GetReason() != c.reason || f.GetRetryAfter().AsDuration() != c.retryAfter ||
				(c.retryAfter == 0) != (f.GetRetryAfter() == nil) {
				t.Fatalf("failure = %v; want terminal %v, reason %q, retry after %v", f, c.terminal, c.reason, c.retryAfter)
			}
			if !strings.Contains(f.GetMessage(), c.contains) || !strings.Contains(f.GetMessage(), "boom") {
				t.Fatalf("message = %q; want it to contain %q and the handler's message", f.GetMessage(), c.contains)
			}
		})
	}
}
