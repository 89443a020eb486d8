package document

import (
	"buf.build/go/protovalidate"

	"github.com/convergehq/converge/server/internal/rpcvalidate"
)

// ViolationMessage is the text conctl shows for a rule violation found by
// protovalidate before a document is sent: the same words the server uses
// for the same violation (rpcvalidate.Message), so a mistake reads alike
// whichever side catches it.
func ViolationMessage(v *protovalidate.Violation) string {
	return rpcvalidate.Message(v)
}
