package converge

import (
	"encoding/json"
	"errors"
	"testing"
	"time"
)

type decodePort struct {
	Port int    `json:"port"`
	Name string `json:"name"`
}

type decodeSpec struct {
	Replicas int                   `json:"replicas"`
	Ports    []decodePort          `json:"ports"`
	Labels   map[string]decodePort `json:"labels"`
	Nested   *struct {
		X [][]int `json:"x"`
	} `json:"nested"`
	Small   uint8     `json:"small"`
	Ratio   float32   `json:"ratio"`
	Enabled bool      `json:"enabled"`
	Blob    []byte    `json:"blob"`
	When    time.Time `json:"when"`
}

func TestDecodeJSONNamesThePath(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"replicas":"3"}`, "spec.replicas: want integer, got string"},
		{`{"replicas":1.5}`, "spec.replicas: want integer, got number 1.5"},
		{`{"replicas":[1]}`, "spec.replicas: want integer, got array"},
		{`{"ports":[{"port":1},{"port":"x"}]}`, "spec.ports[1].port: want integer, got string"},
		{` { "ports" : [ {"port":1} , { "name" : true } ] } `, "spec.ports[1].name: want string, got boolean"},
		{`{"ports":{"a":1}}`, "spec.ports: want array, got object"},
		{`{"labels":{"app.kubernetes.io/name":{"port":false}}}`, `spec.labels["app.kubernetes.io/name"].port: want integer, got boolean`},
		{`{"labels":{"web":{"port":{}}}}`, "spec.labels.web.port: want integer, got object"},
		{`{"nested":{"x":[[1],[2,{"a":1}]]}}`, "spec.nested.x[1][1]: want integer, got object"},
		{`{"small":300}`, "spec.small: number 300 is out of the range of Go type uint8"},
		{`{"ratio":1e400}`, "spec.ratio: number 1e400 is out of the range of Go type float32"},
		{`{"enabled":"yes"}`, "spec.enabled: want boolean, got string"},
		{`{"blob":7}`, "spec.blob: want string (base64), got number"},
		// A type's own UnmarshalJSON says what is wrong but not where.
		{`{"when":7}`, "spec: Time.UnmarshalJSON: input is not a JSON string"},
		{`[1]`, "spec: want object, got array"},
		{`"x"`, "spec: want object, got string"},
		{`{"replicas":`, "spec: invalid JSON at byte 12: unexpected end of JSON input"},
	} {
		var v decodeSpec
		err := decodeJSON("spec", []byte(c.in), &v)
		var de *DecodeError
		if !errors.As(err, &de) || err.Error() != c.want {
			t.Errorf("decode %s:\n got %v\nwant %s", c.in, err, c.want)
		}
	}
}

func TestDecodeJSONAcceptsWhatUnmarshalDoes(t *testing.T) {
	v := decodeSpec{Replicas: 9}
	if err := decodeJSON("spec", nil, &v); err != nil || v.Replicas != 9 {
		t.Fatalf("empty data: %v, replicas %d; want nil and the value left alone", err, v.Replicas)
	}
	if err := decodeJSON("spec", []byte(`{"replicas":2,"unknown":{"deep":[1]}}`), &v); err != nil || v.Replicas != 2 {
		t.Fatalf("unknown field: %v, replicas %d; want it ignored", err, v.Replicas)
	}
}

// TestDecodeErrorWrapsTheJSONError: callers can still reach encoding/json's
// error, whose Field is the path without indexes or map keys.
func TestDecodeErrorWrapsTheJSONError(t *testing.T) {
	var v decodeSpec
	err := decodeJSON("spec", []byte(`{"ports":[{"port":"x"}]}`), &v)
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) || te.Field != "ports.port" {
		t.Fatalf("error %v does not wrap the UnmarshalTypeError", err)
	}
}

func TestPathAtNeverPanics(t *testing.T) {
	for _, in := range []string{``, `{`, `[`, `}`, `]]`, `{"a":}`, `{"a" 1}`, `[1,,2]`, `nul`, `{"a":[{"b":[[[]]]}]}`} {
		for off := int64(-1); off <= int64(len(in))+1; off++ {
			pathAt([]byte(in), off)
		}
	}
}
