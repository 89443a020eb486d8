package stdterraform

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"time"

	"github.com/hashicorp/terraform-exec/tfexec"
)

// Redacted stands in for the value of a sensitive output in status.
const Redacted = "(sensitive)"

// maxOutputs bounds the encoded outputs, under the server's 512 KiB status
// limit with room for the other fields.
const maxOutputs = 448 << 10

// status is what a std.terraform resource reports.
type status struct {
	Outputs          map[string]json.RawMessage `json:"outputs"`
	AppliedAt        string                     `json:"applied_at"`
	TerraformVersion string                     `json:"terraform_version,omitempty"`
	// State says where the resource's state lives.
	State string `json:"state"`
}

// newStatus builds the status of an applied module; sensitive outputs are
// redacted, and outputs too large for a status are an error naming the
// largest.
func newStatus(outputs map[string]tfexec.OutputMeta, where, version string) (status, error) {
	st := status{Outputs: make(map[string]json.RawMessage, len(outputs)), AppliedAt: time.Now().UTC().Format(time.RFC3339), TerraformVersion: version, State: where}
	redacted, _ := json.Marshal(Redacted)
	total, largest, largestSize := 0, "", 0
	for name, o := range outputs {
		v := o.Value
		if o.Sensitive {
			v = redacted
		}
		if len(v) == 0 {
			v = json.RawMessage("null")
		}
		st.Outputs[name] = v
		total += len(name) + len(v)
		if len(v) > largestSize {
			largest, largestSize = name, len(v)
		}
	}
	if total > maxOutputs {
		return status{}, fmt.Errorf("status.outputs: the outputs take %d bytes, more than the %d a status may hold; the largest is %q (%d bytes)", total, maxOutputs, largest, largestSize)
	}
	return st, nil
}

// varFile is the apply/destroy option passing the run's variables.
func varFile(l layout) *tfexec.VarFileOption { return tfexec.VarFile(l.vars()) }

// lookPath finds a binary the way runs do.
func lookPath(bin string) (string, error) { return exec.LookPath(bin) }
