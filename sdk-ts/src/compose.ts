import { create } from "@bufbuild/protobuf";
import {
  ChildSchema,
  CompositionSchema,
  EdgeSchema,
  FlowSchema,
  type Child as ChildMessage,
  type Composition,
  type Edge as EdgeMessage,
  type Flow as FlowMessage,
} from "../gen/converge/v1/worker_pb.js";
import { ResourceRefSchema, type ResourceRef } from "../gen/converge/v1/types_pb.js";
import { encodeObject } from "./json.js";
import {
  chars,
  checkKind,
  checkKindVersion,
  checkLabels,
  checkName,
  checkNamespace,
  checkPointer,
  limits,
} from "./names.js";

/**
 * Ref names a resource: a child of the composition, or a resource outside it
 * listed in {@link Result.references}. A {@link Child} is a Ref too, so a
 * child can be passed wherever a Ref is expected.
 */
export interface Ref {
  /** The resource's namespace; empty or absent means the composite's own. */
  namespace?: string;
  kind: string;
  name: string;
}

/**
 * Child is one resource a composer wants in its composite. The child lives
 * in the composite's namespace and is owned by it: the server creates it,
 * rewrites its spec when the composer's answer changes, and prunes it once
 * the composer stops emitting it.
 *
 * A child that breaks a rule below is reported as a terminal failure of the
 * compose naming the child, e.g. `children[3] "vpc-1": name: ...`.
 */
export interface Child {
  /** The child's kind: lower-case words separated by '.' or '-', at most 63 characters. */
  kind: string;
  /** The child's kind version, 1 to 32767. */
  kindVersion: number;
  /**
   * Identifies the child among the resources of its kind in the namespace:
   * 1 to 253 characters, lower-case letters, digits, '.', '_' and '-',
   * starting and ending with a letter or digit.
   */
  name: string;
  /** At most 64 labels; keys 1 to 253 characters of letters, digits, '.', '_', '/' and '-'. */
  labels?: Record<string, string>;
  /**
   * The child's spec: a value that JSON-encodes to an object of at most
   * 512 KiB; absent means an empty spec. Value flows of edges whose
   * dependent is this child write into it.
   */
  spec?: unknown;
}

/**
 * Flow copies one value from an edge's dependency into its dependent's
 * spec. Exactly one of from and expr is set; see {@link flowFrom} and
 * {@link flowExpr}.
 */
export interface Flow {
  /**
   * A JSON pointer (RFC 6901) into the dependency's status, e.g.
   * "/account_id". While the value is missing the dependent waits, with a
   * condition naming the field.
   */
  from?: string;
  /**
   * A CEL expression over the dependency's `status` and `spec`, e.g.
   * `status.cidr + "/24"`; at most 4096 characters.
   */
  expr?: string;
  /** A JSON pointer into the dependent's spec where the value goes. */
  to: string;
}

/**
 * Edge makes dependent depend on dependency: the server schedules the
 * dependent only once the dependency is synced, and each flow copies a value
 * from the dependency into the dependent's spec, before the dependent runs
 * and again whenever the value changes. The dependent must be a child of the
 * composition (no namespace); the dependency is a child or one of
 * {@link Result.references}.
 */
export interface Edge {
  dependent: Ref;
  dependency: Ref;
  /** At most 32 value flows. */
  flows?: Flow[];
}

/** refTo returns a reference to the resource of the given kind and name. */
export function refTo(kind: string, name: string, namespace?: string): Ref {
  return namespace ? { namespace, kind, name } : { kind, name };
}

/**
 * dependsOn returns an edge making dependent wait for dependency, with the
 * given value flows. Children can be passed directly:
 *
 * ```ts
 * dependsOn(vpc, account, flowFrom("/account_id", "/account_id"))
 * ```
 */
export function dependsOn(dependent: Ref, dependency: Ref, ...flows: Flow[]): Edge {
  return { dependent: pickRef(dependent), dependency: pickRef(dependency), flows };
}

/**
 * flowFrom returns a flow copying the dependency's status value at the JSON
 * pointer from to the dependent's spec at the JSON pointer to.
 */
export function flowFrom(from: string, to: string): Flow {
  return { from, to };
}

/**
 * flowExpr returns a flow writing the value of the CEL expression expr,
 * evaluated over the dependency's `status` and `spec`, to the dependent's
 * spec at the JSON pointer to.
 */
export function flowExpr(expr: string, to: string): Flow {
  return { expr, to };
}

function pickRef(r: Ref): Ref {
  return r?.namespace ? { namespace: r.namespace, kind: r?.kind, name: r?.name } : { kind: r?.kind, name: r?.name };
}

/** describeRef renders a reference for messages: `vpc "lz-vpc-0"`, or `vpc "shared/lz-vpc-0"`. */
export function describeRef(r: Ref | undefined): string {
  const name = r?.namespace ? `${r.namespace}/${r?.name}` : r?.name;
  return `${r?.kind} ${JSON.stringify(name ?? "")}`;
}

function refKey(r: Ref): string {
  return JSON.stringify([r.namespace ?? "", r.kind, r.name]);
}

/** What encodeComposition reads from a result. */
export interface CompositionInput {
  children?: Child[];
  edges?: Edge[];
  references?: Ref[];
}

/**
 * encodeComposition checks a composer's answer and encodes it as one
 * Composition; splitComposition then cuts it into parts the protocol
 * accepts. It throws an Error naming the first offending item, e.g.
 * `children[3] "vpc-1": name: ...`.
 */
export function encodeComposition(res: CompositionInput): Composition {
  const comp = create(CompositionSchema);
  const children = new Map<string, number>();
  asList("children", res.children).forEach((c: Child, i) => {
    const where = `children[${i}] ${JSON.stringify(c?.name ?? "")}`;
    const pc = encodeChild(c, where);
    const key = refKey({ kind: c.kind, name: c.name });
    const j = children.get(key);
    if (j !== undefined) {
      throw new Error(`${where}: duplicates children[${j}] (same kind ${JSON.stringify(c.kind)} and name)`);
    }
    children.set(key, i);
    comp.children.push(pc);
  });
  const edges = new Map<string, number>();
  asList("edges", res.edges).forEach((e: Edge, i) => {
    const where = `edges[${i}] (${describeRef(e?.dependent)} → ${describeRef(e?.dependency)})`;
    const pe = encodeEdge(e, where);
    const key = refKey(e.dependent) + refKey(e.dependency);
    const j = edges.get(key);
    if (j !== undefined) {
      throw new Error(`${where}: same dependent and dependency as edges[${j}]; put all flows between two resources in one edge`);
    }
    edges.set(key, i);
    comp.edges.push(pe);
  });
  asList("references", res.references).forEach((r: Ref, i) => {
    const problem = checkRef("reference", r);
    if (problem) {
      throw new Error(`references[${i}] (${describeRef(r)}): ${problem}`);
    }
    comp.references.push(refMessage(r));
  });
  return comp;
}

function asList<T>(field: string, v: T[] | undefined): T[] {
  if (v === undefined || v === null) {
    return [];
  }
  if (!Array.isArray(v)) {
    throw new Error(`${field}: must be an array`);
  }
  return v;
}

function encodeChild(c: Child, where: string): ChildMessage {
  if (c === null || typeof c !== "object") {
    throw new Error(`${where}: must be an object`);
  }
  const problem = checkKind(c.kind) ?? checkKindVersion(c.kindVersion) ?? checkName(c.name) ?? checkLabels(c.labels);
  if (problem) {
    throw new Error(`${where}: ${problem}`);
  }
  let spec: Uint8Array | undefined;
  try {
    spec = encodeObject(c.spec, limits.childSpecBytes);
  } catch (e) {
    throw new Error(`${where}: spec: ${(e as Error).message}`);
  }
  return create(ChildSchema, {
    kind: c.kind,
    kindVersion: c.kindVersion,
    name: c.name,
    // A copy: the message is encoded later, and the handler may change its map.
    labels: { ...(c.labels ?? {}) },
    spec: spec ?? new TextEncoder().encode("{}"),
  });
}

function encodeEdge(e: Edge, where: string): EdgeMessage {
  if (e === null || typeof e !== "object") {
    throw new Error(`${where}: must be an object`);
  }
  if (e.dependent?.namespace) {
    throw new Error(
      `${where}: dependent.namespace: ${JSON.stringify(e.dependent.namespace)}: a dependent is a child of the composition, in its namespace; leave the namespace empty`,
    );
  }
  const problem = checkRef("dependent", e.dependent) ?? checkRef("dependency", e.dependency);
  if (problem) {
    throw new Error(`${where}: ${problem}`);
  }
  if (refKey(e.dependent) === refKey(e.dependency)) {
    throw new Error(`${where}: a resource cannot depend on itself`);
  }
  const flows = asList(`${where}: flows`, e.flows);
  if (flows.length > limits.flowsPerEdge) {
    throw new Error(`${where}: flows: ${flows.length} flows, more than ${limits.flowsPerEdge}`);
  }
  const pe = create(EdgeSchema, { dependent: refMessage(e.dependent), dependency: refMessage(e.dependency) });
  flows.forEach((f, i) => {
    pe.flows.push(encodeFlow(f, `${where}: flows[${i}]`));
  });
  return pe;
}

function encodeFlow(f: Flow, where: string): FlowMessage {
  const toProblem = checkPointer(f?.to);
  if (toProblem) {
    throw new Error(`${where}.to: ${toProblem}`);
  }
  if (f.from && f.expr) {
    throw new Error(`${where}: set from or expr, not both`);
  }
  if (f.from) {
    const p = checkPointer(f.from);
    if (p) {
      throw new Error(`${where}.from: ${p}`);
    }
    return create(FlowSchema, { to: f.to, source: { case: "from", value: f.from } });
  }
  if (f.expr) {
    if (typeof f.expr !== "string" || !f.expr.isWellFormed()) {
      throw new Error(`${where}.expr: not a well-formed string`);
    }
    if (chars(f.expr) > limits.exprLen) {
      throw new Error(`${where}.expr: ${chars(f.expr)} characters, more than ${limits.exprLen}`);
    }
    return create(FlowSchema, { to: f.to, source: { case: "expr", value: f.expr } });
  }
  throw new Error(`${where}: set from (a JSON pointer into the dependency's status) or expr (a CEL expression)`);
}

function checkRef(field: string, r: Ref | undefined): string | undefined {
  if (r === null || typeof r !== "object") {
    return `${field}: must be a reference ({kind, name})`;
  }
  const problem = checkNamespace(r.namespace) ?? checkKind(r.kind) ?? checkName(r.name);
  return problem ? `${field}.${problem}` : undefined;
}

export function refMessage(r: Ref): ResourceRef {
  return create(ResourceRefSchema, { namespace: r.namespace ?? "", kind: r.kind, name: r.name });
}
