package tracing

import "testing"

// TestEnabled: tracing is off unless the environment names the otlp
// exporter or an OTLP endpoint, and off again when disabled or "none".
func TestEnabled(t *testing.T) {
	for _, c := range []struct {
		env     map[string]string
		on, err bool
	}{
		{env: nil},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, on: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, on: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, on: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"}},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_SDK_DISABLED": "true"}},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, err: true},
	} {
		on, err := Enabled(func(k string) string { return c.env[k] })
		if on != c.on || (err != nil) != c.err {
			t.Errorf("%v: on %v, err %v; want on %v, an error %v", c.env, on, err, c.on, c.err)
		}
	}
}

// TestTraceParentRoundTrip: a stored traceparent parses back to its span
// context; malformed ones give none.
func TestTraceParentRoundTrip(t *testing.T) {
	sc := SpanContextOf("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	if !sc.IsValid() || sc.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || !sc.IsSampled() {
		t.Fatalf("span context = %v", sc)
	}
	for _, bad := range []string{"", "00-zz-00f067aa0ba902b7-01", "00-00000000000000000000000000000000-00f067aa0ba902b7-01"} {
		if SpanContextOf(bad).IsValid() {
			t.Errorf("%q parsed as valid", bad)
		}
	}
}
