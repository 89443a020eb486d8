package taskrec

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// A record's input and result are stored as parts in the forms the
// server already holds (the spec, status, labels and config as the broker
// loaded them from the database, the worker's values as received), not as
// JSON documents: building a JSON document for every task was most of
// what recording cost the server, and the json type's input check most
// of what storing one cost PostgreSQL. Document assembles the JSON a
// reader sees, once per read.
//
// A stored document is the byte formatParts, then parts: a key byte, the
// uvarint length of the part's bytes, the bytes. A key with cutFlag set
// stands for a part cut to fit the byte budget; its bytes are the uvarint
// of the length cut. A document whose first byte is '{' was written as
// JSON before this format and is read as it is.
const formatParts byte = 1

// cutFlag marks a cut part's key.
const cutFlag byte = 0x80

// key names a part: what its bytes hold and the JSON key it becomes.
type key byte

// Input parts.
const (
	keyKindVersion key = 1 + iota // uvarint
	keyReaction                   // text
	keySpec                       // JSON, as stored
	keyStatus                     // JSON, as stored
	keyLabels                     // JSON object of strings, as stored
	keyConfig                     // JSON, as stored: redacted when read
	keyFlowed                     // JSON, built when written (only resources with value flows)
	keyOperation                  // the operation task's payload, JSON as stored
	keyReactor                    // the reactor delivery's payload, JSON as stored
)

// Result parts.
const (
	keyResultStatus    key = resultKeys + iota // JSON, as received
	keyUnhealthy                               // no bytes
	keyCondition                               // one Condition, protobuf; repeated
	keyOperationOutput                         // JSON, as received
	keyChildren                                // JSON, built when written
	keyError                                   // the TaskError, protobuf
	keyServerError                             // text
)

// part is one part of a record being encoded; b may alias the claim's or
// the result's bytes, which are never changed after they are received.
type part struct {
	k key
	b []byte
}

func (p part) size() int { return 1 + uvarintLen(uint64(len(p.b))) + len(p.b) }

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// resultKeys starts the result's keys.
const resultKeys key = 32

func (k key) result() bool { return k&^key(cutFlag) >= resultKeys }

// appendDoc appends the stored document of the input's parts, or of the
// result's.
func appendDoc(dst []byte, parts []part, result bool) []byte {
	dst = append(dst, formatParts)
	for _, p := range parts {
		if p.k.result() != result {
			continue
		}
		dst = append(dst, byte(p.k))
		dst = binary.AppendUvarint(dst, uint64(len(p.b)))
		dst = append(dst, p.b...)
	}
	return dst
}

// storedPart is a part read back: its key and bytes, or for a cut part
// the length cut.
type storedPart struct {
	k      key
	b      []byte
	wasCut bool
	cut    int
}

var errTruncated = errors.New("a part runs past the end")

// readParts splits a stored document into its parts; b must start with
// formatParts.
func readParts(b []byte) ([]storedPart, error) {
	var out []storedPart
	for i := 1; i < len(b); {
		k := b[i]
		n, w := binary.Uvarint(b[i+1:])
		if w <= 0 {
			return nil, fmt.Errorf("part at byte %d: unreadable length", i)
		}
		start := i + 1 + w
		if n > uint64(len(b)-start) {
			return nil, fmt.Errorf("part at byte %d: %w", i, errTruncated)
		}
		p := storedPart{k: key(k &^ cutFlag), b: b[start : start+int(n)]}
		if k&cutFlag != 0 {
			cut, w := binary.Uvarint(p.b)
			if w <= 0 || w != len(p.b) || cut > 1<<40 {
				return nil, fmt.Errorf("part at byte %d: unreadable cut length", i)
			}
			p.wasCut, p.cut, p.b = true, int(cut), nil
		}
		out = append(out, p)
		i = start + int(n)
	}
	return out, nil
}
