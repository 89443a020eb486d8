// The server's rules for names, labels and pointers. The SDK checks them
// before sending, so a composer's mistake is a terminal failure naming the
// child or edge instead of a message the server refuses, which would break
// the stream and be re-sent after every reconnect.

const kindPattern = /^[a-z][a-z0-9]*([.-][a-z0-9]+)*$/;
const namePattern = /^[a-z0-9]([a-z0-9._-]*[a-z0-9])?$/;
const namespacePattern = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/;
const labelKeyPattern = /^[A-Za-z0-9]([A-Za-z0-9._/-]*[A-Za-z0-9])?$/;

export const limits = {
  kindLen: 63,
  kindVersion: 32767,
  nameLen: 253,
  namespaceLen: 63,
  labels: 64,
  labelLen: 253,
  pointerLen: 1024,
  exprLen: 4096,
  flowsPerEdge: 32,
  reactionLen: 63,
  childSpecBytes: 512 << 10,
} as const;

/** chars counts code points, as the server's length rules do. */
export function chars(s: string): number {
  let n = 0;
  for (const _ of s) {
    n++;
  }
  return n;
}

export function checkKind(kind: string): string | undefined {
  if (typeof kind !== "string" || kind === "") {
    return "kind: must not be empty";
  }
  if (kind.length > limits.kindLen) {
    return `kind: ${kind.length} characters, more than ${limits.kindLen}`;
  }
  if (!kindPattern.test(kind)) {
    return `kind: ${JSON.stringify(kind)} must be lower-case words of letters and digits separated by '.' or '-'`;
  }
  return undefined;
}

export function checkKindVersion(v: number): string | undefined {
  if (!Number.isInteger(v) || v < 1 || v > limits.kindVersion) {
    return `kind_version: ${v} is not an integer between 1 and ${limits.kindVersion}`;
  }
  return undefined;
}

export function checkName(name: string): string | undefined {
  if (typeof name !== "string" || name === "") {
    return "name: must not be empty";
  }
  if (name.length > limits.nameLen) {
    return `name: ${name.length} characters, more than ${limits.nameLen}`;
  }
  if (!namePattern.test(name)) {
    return `name: ${JSON.stringify(name)} must be lower-case letters, digits, '.', '_' or '-', starting and ending with a letter or digit`;
  }
  return undefined;
}

export function checkNamespace(ns: string | undefined): string | undefined {
  if (ns === undefined || ns === "") {
    return undefined;
  }
  if (typeof ns !== "string") {
    return "namespace: must be a string";
  }
  if (ns.length > limits.namespaceLen) {
    return `namespace: ${ns.length} characters, more than ${limits.namespaceLen}`;
  }
  if (!namespacePattern.test(ns)) {
    return `namespace: ${JSON.stringify(ns)} must be lower-case letters, digits or '-', starting and ending with a letter or digit`;
  }
  return undefined;
}

export function checkLabels(labels: Record<string, string> | undefined): string | undefined {
  if (labels === undefined || labels === null) {
    return undefined;
  }
  if (typeof labels !== "object") {
    return "labels: must be an object of strings";
  }
  const keys = Object.keys(labels).sort();
  if (keys.length > limits.labels) {
    return `labels: ${keys.length} labels, more than ${limits.labels}`;
  }
  // In key order, so the same labels always fail with the same message.
  for (const k of keys) {
    const v = labels[k];
    const where = `labels[${JSON.stringify(k)}]`;
    if (k === "" || k.length > limits.labelLen) {
      return `${where}: key must be 1 to ${limits.labelLen} characters`;
    }
    if (!labelKeyPattern.test(k)) {
      return `${where}: key must be letters, digits, '.', '_', '/' or '-', starting and ending with a letter or digit`;
    }
    if (typeof v !== "string") {
      return `${where}: value must be a string, got ${typeof v}`;
    }
    if (!v.isWellFormed()) {
      return `${where}: value is not valid Unicode (it holds a lone surrogate)`;
    }
    if (chars(v) > limits.labelLen) {
      return `${where}: value is ${chars(v)} characters, more than ${limits.labelLen}`;
    }
  }
  return undefined;
}

/**
 * checkPointer checks a JSON pointer (RFC 6901) that names a location below
 * the document's root.
 */
export function checkPointer(p: string): string | undefined {
  if (typeof p !== "string") {
    return "must be a string";
  }
  if (!p.isWellFormed()) {
    return "not valid Unicode (it holds a lone surrogate)";
  }
  if (chars(p) > limits.pointerLen) {
    return `${chars(p)} characters, more than ${limits.pointerLen}`;
  }
  if (!p.startsWith("/")) {
    return `${JSON.stringify(p)} is not a JSON pointer: it must start with '/'`;
  }
  for (let i = 0; i < p.length; i++) {
    if (p[i] === "~" && p[i + 1] !== "0" && p[i + 1] !== "1") {
      return `${JSON.stringify(p)} is not a JSON pointer: '~' must be followed by 0 or 1`;
    }
  }
  return undefined;
}

/** checkReactionName checks the name a handler is registered under. */
export function checkReactionName(reaction: string): string | undefined {
  if (typeof reaction !== "string" || reaction === "") {
    return "reaction: must not be empty";
  }
  if (chars(reaction) > limits.reactionLen) {
    return `reaction: ${chars(reaction)} characters, more than ${limits.reactionLen}`;
  }
  return undefined;
}
