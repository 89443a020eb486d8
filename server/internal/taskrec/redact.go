package taskrec

import (
	"encoding/json"
	"regexp"
)

// Redacted stands in for a redacted config value.
const Redacted = "(redacted)"

// secretKey matches the config keys whose values a record never keeps.
// Provider configs have no way to mark a value secret, so the name
// decides, erring on the side of hiding ("apiKey", "clientSecret",
// "password", "token", "sshKeyPath" alike).
var secretKey = regexp.MustCompile(`(?i)password|passwd|secret|token|key|credential|private`)

// Redact returns a config document with the value of every key matching
// secretKey, at any depth, replaced by Redacted. A document that is not
// JSON is replaced whole.
func Redact(config []byte) any {
	var v any
	if json.Unmarshal(config, &v) != nil {
		return Redacted
	}
	return redact(v)
}

func redact(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, child := range x {
			if secretKey.MatchString(k) {
				x[k] = Redacted
			} else {
				x[k] = redact(child)
			}
		}
	case []any:
		for i, child := range x {
			x[i] = redact(child)
		}
	}
	return v
}
