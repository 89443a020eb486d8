// Translates JSON Schema (2020-12, as kind manifests use) into TypeScript
// type expressions. It never throws: a part it cannot express becomes
// `unknown`, so a valid schema always yields a type that accepts at least
// every value the schema accepts.

/** Context of one translation: where named types ($defs) go. */
export interface SchemaContext {
  /** Prefix of the names of types made from $defs, e.g. "GreetingV1". */
  prefix: string;
  /** Named types made so far: name → declaration. */
  named: Map<string, string>;
  /** The root schema, for resolving "#/$defs/..." references. */
  root: unknown;
}

type Schema = Record<string, unknown>;

const maxDepth = 64;

/** typeOf returns a TypeScript type expression for schema s, indented by indent. */
export function typeOf(s: unknown, ctx: SchemaContext, indent = "", depth = 0): string {
  if (depth > maxDepth) {
    return "unknown";
  }
  if (s === true || s === undefined) {
    return "unknown";
  }
  if (s === false) {
    return "never";
  }
  if (typeof s !== "object" || s === null || Array.isArray(s)) {
    return "unknown";
  }
  const o = s as Schema;
  const parts: string[] = [];
  if (typeof o.$ref === "string") {
    parts.push(refType(o.$ref, ctx, depth));
  }
  if ("const" in o) {
    parts.push(literal(o.const));
  } else if (Array.isArray(o.enum)) {
    parts.push(o.enum.length === 0 ? "never" : o.enum.map(literal).join(" | "));
  } else if (hasShape(o)) {
    parts.push(shape(o, ctx, indent, depth));
  }
  for (const key of ["oneOf", "anyOf"] as const) {
    const list = o[key];
    if (Array.isArray(list) && list.length > 0) {
      parts.push(list.map((x) => paren(typeOf(x, ctx, indent, depth + 1))).join(" | "));
    }
  }
  if (Array.isArray(o.allOf)) {
    for (const x of o.allOf) {
      const t = typeOf(x, ctx, indent, depth + 1);
      if (t !== "unknown") {
        parts.push(paren(t));
      }
    }
  }
  const known = parts.filter((p) => p !== "unknown");
  if (known.length === 0) {
    return "unknown";
  }
  return known.length === 1 ? known[0] : known.map(paren).join(" & ");
}

function hasShape(o: Schema): boolean {
  return "type" in o || "properties" in o || "items" in o || "prefixItems" in o || "additionalProperties" in o;
}

/** shape translates the type keyword and the object and array keywords. */
function shape(o: Schema, ctx: SchemaContext, indent: string, depth: number): string {
  let types: string[];
  if (typeof o.type === "string") {
    types = [o.type];
  } else if (Array.isArray(o.type)) {
    types = o.type.filter((t): t is string => typeof t === "string");
  } else if ("properties" in o || "additionalProperties" in o) {
    types = ["object"];
  } else if ("items" in o || "prefixItems" in o) {
    types = ["array"];
  } else {
    return "unknown";
  }
  const out = types.map((t) => {
    switch (t) {
      case "string":
        return "string";
      case "integer":
      case "number":
        return "number";
      case "boolean":
        return "boolean";
      case "null":
        return "null";
      case "array":
        return arrayType(o, ctx, indent, depth);
      case "object":
        return objectType(o, ctx, indent, depth);
      default:
        return "unknown";
    }
  });
  return out.includes("unknown") ? "unknown" : [...new Set(out)].join(" | ");
}

function arrayType(o: Schema, ctx: SchemaContext, indent: string, depth: number): string {
  const rest = o.items === undefined ? "unknown" : typeOf(o.items, ctx, indent, depth + 1);
  if (Array.isArray(o.prefixItems)) {
    const head = o.prefixItems.map((x) => typeOf(x, ctx, indent, depth + 1));
    if (o.items === false) {
      return `[${head.join(", ")}]`;
    }
    return `[${[...head, `...${paren(rest)}[]`].join(", ")}]`;
  }
  return `${paren(rest)}[]`;
}

function objectType(o: Schema, ctx: SchemaContext, indent: string, depth: number): string {
  const props = o.properties && typeof o.properties === "object" && !Array.isArray(o.properties) ? (o.properties as Schema) : {};
  const required = new Set(Array.isArray(o.required) ? o.required.filter((r): r is string => typeof r === "string") : []);
  const inner = indent + "  ";
  const lines: string[] = [];
  for (const [name, ps] of Object.entries(props)) {
    const doc = docComment(ps, inner);
    if (doc) lines.push(doc);
    lines.push(`${inner}${propName(name)}${required.has(name) ? "" : "?"}: ${typeOf(ps, ctx, inner, depth + 1)};`);
  }
  // Required names without a property schema still exist, with any value.
  for (const name of required) {
    if (!(name in props)) {
      lines.push(`${inner}${propName(name)}: unknown;`);
    }
  }
  const extra = o.additionalProperties;
  const pattern = o.patternProperties && typeof o.patternProperties === "object" ? Object.values(o.patternProperties as Schema) : [];
  if (lines.length === 0 && (extra === undefined || extra === true) && pattern.length === 0) {
    return "Record<string, unknown>";
  }
  if (typeof extra === "object" && extra !== null || pattern.length > 0) {
    // Every property must also fit the index signature, so the signature
    // widens to unknown when there are named properties.
    const values = [extra, ...pattern].filter((x) => x !== undefined && x !== false);
    const t = lines.length > 0 ? "unknown" : values.map((x) => typeOf(x, ctx, inner, depth + 1)).join(" | ") || "unknown";
    lines.push(`${inner}[key: string]: ${t};`);
  }
  if (lines.length === 0) {
    return "Record<string, never>";
  }
  return `{\n${lines.join("\n")}\n${indent}}`;
}

/** refType names the type of a "#/$defs/x" (or "#/definitions/x") reference, declaring it once. */
function refType(ref: string, ctx: SchemaContext, depth: number): string {
  const m = /^#\/(\$defs|definitions)\/([^/]+)$/.exec(ref);
  if (!m) {
    return "unknown";
  }
  const key = m[2].replace(/~1/g, "/").replace(/~0/g, "~");
  const name = ctx.prefix + pascal(key);
  if (!ctx.named.has(name)) {
    ctx.named.set(name, ""); // a recursive reference finds the name
    const defs = (ctx.root as Schema)?.[m[1]] as Schema | undefined;
    const target = defs && typeof defs === "object" ? defs[key] : undefined;
    const doc = docComment(target, "");
    ctx.named.set(name, `${doc ? doc + "\n" : ""}export type ${name} = ${typeOf(target, ctx, "", depth + 1)};`);
  }
  return name;
}

/** docComment renders a schema's description, default and format as JSDoc; "" when none. */
export function docComment(s: unknown, indent: string): string {
  if (typeof s !== "object" || s === null) {
    return "";
  }
  const o = s as Schema;
  const lines: string[] = [];
  if (typeof o.description === "string" && o.description.trim() !== "") {
    lines.push(...o.description.trim().split("\n"));
  }
  if (typeof o.format === "string") {
    lines.push(`Format: ${o.format}.`);
  }
  if (typeof o.pattern === "string") {
    lines.push(`Pattern: \`${o.pattern}\`.`);
  }
  if ("default" in o) {
    lines.push(`@default ${JSON.stringify(o.default)}`);
  }
  if (lines.length === 0) {
    return "";
  }
  const safe = lines.map((l) => l.replace(/\*\//g, "*\\/"));
  return `${indent}/**\n${safe.map((l) => `${indent} * ${l}`.trimEnd()).join("\n")}\n${indent} */`;
}

function literal(v: unknown): string {
  if (v === null || typeof v === "string" || typeof v === "number" || typeof v === "boolean") {
    return JSON.stringify(v);
  }
  return "unknown";
}

/** propName renders a property name: bare when it is an identifier, quoted otherwise. */
export function propName(name: string): string {
  return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(name) ? name : JSON.stringify(name);
}

/** paren wraps a union or intersection, so it can be an array's element or a member of another. */
function paren(t: string): string {
  let depth = 0;
  let quote = "";
  for (let i = 0; i < t.length; i++) {
    const c = t[i];
    if (quote) {
      if (c === "\\") i++;
      else if (c === quote) quote = "";
      continue;
    }
    if (c === '"' || c === "'" || c === "`") quote = c;
    else if ("{[(<".includes(c)) depth++;
    else if ("}])>".includes(c)) depth--;
    else if (depth === 0 && (c === "|" || c === "&")) return `(${t})`;
  }
  return t;
}

/** pascal turns "aws.vpc-peering" into "AwsVpcPeering". */
export function pascal(s: string): string {
  const out = s
    .split(/[^A-Za-z0-9]+/)
    .filter((w) => w !== "")
    .map((w) => w[0].toUpperCase() + w.slice(1))
    .join("");
  return /^[0-9]/.test(out) ? `T${out}` : out || "T";
}
