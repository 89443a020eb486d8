package converge

import (
	"fmt"

	"buf.build/go/protovalidate"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// Bounds of one part of a composition: the protocol's list limits,
// and a byte budget that keeps every message under 1 MiB with room for the
// lease and framing around the part.
const (
	maxPartChildren   = 1000
	maxPartEdges      = 5000
	maxPartReferences = 100
	maxPartBytes      = 1<<20 - 8<<10
)

// report is everything one finished task sends, in this order on one
// stream: the chunks of a large composition (indexes 0, 1, ...), then the
// result, whose compose_chunks counts them. After a reconnect the whole
// report is sent again.
type report struct {
	chunks []*convergev1.ComposeChunk
	result *convergev1.TaskResult
}

// messages counts the stream messages the report needs at most.
func (r *report) messages() int { return len(r.chunks) + 1 }

// validate checks every message of the report against the protocol's
// rules, so the server never sees a message it must refuse.
func (r *report) validate() error {
	for _, c := range r.chunks {
		if err := protovalidate.Validate(c); err != nil {
			return fmt.Errorf("composition chunk %d: %w", c.GetIndex(), err)
		}
	}
	return protovalidate.Validate(r.result)
}

// attachComposition puts comp into the result's success, cut into parts:
// all but the last go in the returned chunks and the last in the result,
// unless the result's own status and conditions leave it no room, in which
// case it is one more chunk and the result carries an empty part.
func attachComposition(lease *convergev1.Lease, s *convergev1.Success, comp *convergev1.Composition) []*convergev1.ComposeChunk {
	parts := splitComposition(comp)
	last := parts[len(parts)-1]
	s.Composition = last
	if proto.Size(s) > maxPartBytes && !isEmpty(last) {
		s.Composition = &convergev1.Composition{}
	} else {
		parts = parts[:len(parts)-1]
	}
	chunks := make([]*convergev1.ComposeChunk, len(parts))
	for i, p := range parts {
		chunks[i] = &convergev1.ComposeChunk{Lease: lease, Index: int32(i), Part: p}
	}
	s.ComposeChunks = int32(len(chunks))
	return chunks
}

// splitComposition cuts c into parts within the bounds, filling each part
// with children, then edges, then references while they fit. It returns at
// least one part: an empty composition is one empty part.
func splitComposition(c *convergev1.Composition) []*convergev1.Composition {
	var parts []*convergev1.Composition
	var children, edges, refs int
	for {
		p := &convergev1.Composition{}
		size := 0
		p.Children, children = fill(c.GetChildren(), children, maxPartChildren, &size)
		p.Edges, edges = fill(c.GetEdges(), edges, maxPartEdges, &size)
		p.References, refs = fill(c.GetReferences(), refs, maxPartReferences, &size)
		parts = append(parts, p)
		if children == len(c.GetChildren()) && edges == len(c.GetEdges()) && refs == len(c.GetReferences()) {
			return parts
		}
	}
}

// fill takes items from items[next:] while the part keeps at most limit of
// them and at most maxPartBytes in all, and returns them with the index of
// the first item left. An empty part takes at least one item, so every
// item finds a part (no single child, edge or reference is near the
// budget: their fields are bounded well below it).
func fill[T proto.Message](items []T, next, limit int, size *int) ([]T, int) {
	start := next
	for next < len(items) && next-start < limit {
		// A repeated message field costs its tag, its length and its bytes;
		// the composition's fields all have one-byte tags.
		n := protowire.SizeTag(1) + protowire.SizeBytes(proto.Size(items[next]))
		if *size > 0 && *size+n > maxPartBytes {
			break
		}
		*size += n
		next++
	}
	if start == next {
		return nil, next
	}
	return items[start:next:next], next
}

func isEmpty(c *convergev1.Composition) bool {
	return len(c.GetChildren()) == 0 && len(c.GetEdges()) == 0 && len(c.GetReferences()) == 0
}
