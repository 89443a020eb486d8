package rollout

import (
	"bytes"
	"encoding/json"
)

// decodeJSON decodes keeping numbers exact (json.Number), as the
// conversion's CEL values expect.
func decodeJSON(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	return d.Decode(v)
}
