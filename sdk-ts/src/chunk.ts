import { create, toBinary, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import {
  ChildSchema,
  ComposeChunkSchema,
  CompositionSchema,
  EdgeSchema,
  SuccessSchema,
  type ComposeChunk,
  type Composition,
  type Lease,
  type Success,
  type TaskResult,
} from "../gen/converge/v1/worker_pb.js";
import { ResourceRefSchema } from "../gen/converge/v1/types_pb.js";

// Bounds of one part of a composition: the protocol's list limits,
// and a byte budget that keeps every message under 1 MiB with room for the
// lease and framing around the part.
export const partLimits = {
  children: 1000,
  edges: 5000,
  references: 100,
  bytes: (1 << 20) - (8 << 10),
};

/**
 * Report is everything one finished task sends, in this order on one
 * stream: the chunks of a large composition (indexes 0, 1, ...), then the
 * result, whose composeChunks counts them. After a reconnect the whole
 * report is sent again.
 */
export interface Report {
  chunks: ComposeChunk[];
  result: TaskResult;
  /** The encoded size of result, for batching. */
  size: number;
}

/** messages counts the stream messages a report needs. */
export function messages(r: Report): number {
  return r.chunks.length + 1;
}

export function sizeOf<Desc extends DescMessage>(schema: Desc, m: MessageShape<Desc>): number {
  return toBinary(schema, m).length;
}

/**
 * attachComposition puts comp into the success, cut into parts: all but the
 * last go in the returned chunks and the last in the success, unless the
 * success's own status and conditions leave it no room, in which case it is
 * one more chunk and the success carries an empty part.
 */
export function attachComposition(lease: Lease, s: Success, comp: Composition): ComposeChunk[] {
  let parts = splitComposition(comp);
  const last = parts[parts.length - 1];
  s.composition = last;
  if (sizeOf(SuccessSchema, s) > partLimits.bytes && !isEmpty(last)) {
    s.composition = create(CompositionSchema);
  } else {
    parts = parts.slice(0, -1);
  }
  const chunks = parts.map((part, index) => create(ComposeChunkSchema, { lease, index, part }));
  s.composeChunks = chunks.length;
  return chunks;
}

/**
 * splitComposition cuts c into parts within the bounds, filling each part
 * with children, then edges, then references while they fit. It returns at
 * least one part: an empty composition is one empty part.
 */
export function splitComposition(c: Composition): Composition[] {
  const sizes = {
    children: c.children.map((m) => fieldSize(sizeOf(ChildSchema, m))),
    edges: c.edges.map((m) => fieldSize(sizeOf(EdgeSchema, m))),
    references: c.references.map((m) => fieldSize(sizeOf(ResourceRefSchema, m))),
  };
  const next = { children: 0, edges: 0, references: 0 };
  const parts: Composition[] = [];
  for (;;) {
    const p = create(CompositionSchema);
    const used = { bytes: 0 };
    p.children = fill(c.children, sizes.children, next, "children", partLimits.children, used);
    p.edges = fill(c.edges, sizes.edges, next, "edges", partLimits.edges, used);
    p.references = fill(c.references, sizes.references, next, "references", partLimits.references, used);
    parts.push(p);
    if (next.children === c.children.length && next.edges === c.edges.length && next.references === c.references.length) {
      return parts;
    }
  }
}

/**
 * fill takes items from where next says while the part keeps at most limit
 * of them and at most partLimits.bytes in all. An empty part takes at least
 * one item, so every item finds a part (no single item is near the budget:
 * their fields are bounded well below it).
 */
function fill<T>(
  items: T[],
  sizes: number[],
  next: Record<"children" | "edges" | "references", number>,
  field: "children" | "edges" | "references",
  limit: number,
  used: { bytes: number },
): T[] {
  const start = next[field];
  let i = start;
  while (i < items.length && i - start < limit) {
    const n = sizes[i];
    if (used.bytes > 0 && used.bytes + n > partLimits.bytes) {
      break;
    }
    used.bytes += n;
    i++;
  }
  next[field] = i;
  return items.slice(start, i);
}

/**
 * fieldSize is what a repeated message field costs: its one-byte tag, its
 * length as a varint, and its bytes.
 */
function fieldSize(n: number): number {
  let varint = 1;
  for (let v = n; v >= 0x80; v = Math.floor(v / 128)) {
    varint++;
  }
  return 1 + varint + n;
}

function isEmpty(c: Composition): boolean {
  return c.children.length === 0 && c.edges.length === 0 && c.references.length === 0;
}
