const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });

/**
 * encodeObject encodes v as JSON, which must be an object of at most limit
 * bytes. undefined, null, or a value that encodes to null, gives undefined.
 * It throws an Error saying what is wrong.
 */
export function encodeObject(v: unknown, limit: number): Uint8Array | undefined {
  if (v === undefined || v === null) {
    return undefined;
  }
  if (v instanceof Uint8Array) {
    // Pre-encoded JSON, as Go's json.RawMessage: checked, not re-encoded.
    return checkEncoded(v, limit);
  }
  const text = JSON.stringify(v);
  if (text === undefined || text === "null") {
    return undefined;
  }
  if (text[0] !== "{") {
    throw new Error(`must be a JSON object, got ${jsonType(text)}`);
  }
  const bytes = encoder.encode(text);
  if (bytes.length > limit) {
    throw new Error(`${bytes.length} bytes encoded, more than the limit of ${limit}`);
  }
  return bytes;
}

function checkEncoded(b: Uint8Array, limit: number): Uint8Array | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(decoder.decode(b));
  } catch (e) {
    throw new Error(`is not valid JSON: ${(e as Error).message}`);
  }
  if (parsed === null) {
    return undefined;
  }
  if (typeof parsed !== "object" || Array.isArray(parsed)) {
    throw new Error(`must be a JSON object, got ${jsonType(JSON.stringify(parsed))}`);
  }
  if (b.length > limit) {
    throw new Error(`${b.length} bytes encoded, more than the limit of ${limit}`);
  }
  return b;
}

/** jsonType names the JSON type of compact, valid, non-null JSON text. */
export function jsonType(text: string): string {
  switch (text[0]) {
    case "[":
      return "an array";
    case '"':
      return "a string";
    case "t":
    case "f":
      return "a boolean";
    default:
      return "a number";
  }
}

/**
 * decodeObject parses wire JSON bytes; empty bytes (and JSON null) give
 * undefined. It throws an Error naming field when the bytes are not JSON.
 */
export function decodeObject(field: string, b: Uint8Array | undefined): Record<string, unknown> | undefined {
  if (b === undefined || b.length === 0) {
    return undefined;
  }
  let v: unknown;
  try {
    v = JSON.parse(decoder.decode(b));
  } catch (e) {
    throw new Error(`${field}: not valid JSON: ${(e as Error).message}`);
  }
  if (v === null) {
    return undefined;
  }
  if (typeof v !== "object" || Array.isArray(v)) {
    throw new Error(`${field}: must be a JSON object, got ${jsonType(JSON.stringify(v))}`);
  }
  return v as Record<string, unknown>;
}

/** hasConfig reports whether a wire config is set: no bytes, blanks and JSON null are not. */
export function hasConfig(b: Uint8Array | undefined): boolean {
  if (b === undefined) {
    return false;
  }
  let start = 0;
  let end = b.length;
  const blank = (c: number) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
  while (start < end && blank(b[start])) start++;
  while (end > start && blank(b[end - 1])) end--;
  if (end === start) {
    return false;
  }
  return !(end - start === 4 && b[start] === 0x6e && b[start + 1] === 0x75 && b[start + 2] === 0x6c && b[start + 3] === 0x6c);
}

export function utf8Length(s: string): number {
  return encoder.encode(s).length;
}

/**
 * boundUTF8 makes s well-formed and at most max bytes of UTF-8, cutting at a
 * character boundary and marking the cut.
 */
export function boundUTF8(s: string, max: number, mark = " …(truncated)"): string {
  s = s.toWellFormed();
  const b = encoder.encode(s);
  if (b.length <= max) {
    return s;
  }
  let end = max;
  while (end > 0 && (b[end] & 0xc0) === 0x80) {
    end--;
  }
  return new TextDecoder().decode(b.subarray(0, end)) + mark;
}
