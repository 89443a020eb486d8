/**
 * Typed handler inputs: generates TypeScript interfaces from kind
 * manifests' JSON Schemas (spec, status, config and each operation's input),
 * for use as the type parameters of Worker.handle:
 *
 * ```ts
 * import { GreetingV1, type GreetingV1Spec, type GreetingV1Status } from "./kinds.js";
 * w.handle<GreetingV1Spec, GreetingV1Status>(GreetingV1.kind, GreetingV1.kindVersion, GreetingV1.reactions.reconcile, async (t) => ...);
 * ```
 *
 * The `converge-ts-types` command runs it on manifest files.
 */
import { parseAllDocuments } from "yaml";
import { docComment, pascal, propName, typeOf, type SchemaContext } from "./schema.js";

export { pascal } from "./schema.js";

/** ManifestSchemas is what the generator reads from a manifest (proto or JSON field names). */
export interface ManifestSchemas {
  kind: string;
  kindVersion: number;
  description?: string;
  specSchema?: unknown;
  statusSchema?: unknown;
  configSchema?: unknown;
  operations?: { verb: string; description?: string; inputSchema?: unknown }[];
  reactions?: { name: string; trigger: string; verb?: string }[];
}

/** Options of {@link generateTypes}. */
export interface GenerateOptions {
  /** Named in the header comment, e.g. the manifest files. */
  source?: string;
  /** The module the Handler type is imported from; default "@converge/sdk". Empty: no Handler aliases. */
  sdkModule?: string;
}

/**
 * manifestsFromYAML reads the manifests in YAML (or JSON) text: documents
 * with `type: manifest`, or with no type but a kind, a kind version and no
 * name (a bare manifest). Other documents (resources, provider configs) are
 * skipped. It throws an Error naming the document for a malformed manifest.
 */
export function manifestsFromYAML(text: string, source = "input"): ManifestSchemas[] {
  const out: ManifestSchemas[] = [];
  parseAllDocuments(text).forEach((doc, i) => {
    const where = `${source}: document ${i + 1}`;
    if (doc.errors.length > 0) {
      throw new Error(`${where}: ${doc.errors[0].message}`);
    }
    const v = doc.toJS() as Record<string, unknown> | null;
    if (v === null || typeof v !== "object" || Array.isArray(v)) {
      return;
    }
    const isManifest = v.type === "manifest" || (v.type === undefined && "kind" in v && !("name" in v));
    if (isManifest) {
      out.push(toManifest(v, where));
    }
  });
  return out;
}

/** identity renders a kind version's names: kind, version, reactions (with their triggers) and verbs. */
function identity(m: ManifestSchemas): string {
  const names = (pairs: [string, string][]) =>
    pairs.length === 0 ? "{}" : `{ ${pairs.map(([k, v]) => `${propName(k)}: ${JSON.stringify(v)}`).join(", ")} }`;
  const reactions = m.reactions ?? [];
  return [
    "{",
    `  kind: ${JSON.stringify(m.kind)},`,
    `  kindVersion: ${m.kindVersion},`,
    `  reactions: ${names(reactions.map((r) => [r.name, r.name]))},`,
    `  triggers: ${names(reactions.map((r) => [r.name, r.trigger]))},`,
    `  verbs: ${names((m.operations ?? []).map((o) => [o.verb, o.verb]))},`,
    "}",
  ].join("\n");
}

function toManifest(v: Record<string, unknown>, where: string): ManifestSchemas {
  const get = (snake: string, camel: string) => (snake in v ? v[snake] : v[camel]);
  const kind = v.kind;
  const version = get("kind_version", "kindVersion");
  if (typeof kind !== "string" || kind === "") {
    throw new Error(`${where}: kind: must be a non-empty string`);
  }
  if (typeof version !== "number" || !Number.isInteger(version) || version < 1) {
    throw new Error(`${where}: kind_version: must be an integer of at least 1`);
  }
  const ops = Array.isArray(v.operations) ? (v.operations as Record<string, unknown>[]) : [];
  const reactions = Array.isArray(v.reactions) ? (v.reactions as Record<string, unknown>[]) : [];
  return {
    kind,
    kindVersion: version,
    description: typeof v.description === "string" ? v.description : undefined,
    specSchema: get("spec_schema", "specSchema"),
    statusSchema: get("status_schema", "statusSchema"),
    configSchema: get("config_schema", "configSchema"),
    operations: ops
      .filter((o) => o && typeof o.verb === "string")
      .map((o) => ({
        verb: o.verb as string,
        description: typeof o.description === "string" ? o.description : undefined,
        inputSchema: "input_schema" in o ? o.input_schema : o.inputSchema,
      })),
    reactions: reactions
      .filter((r) => r && typeof r.name === "string" && typeof r.trigger === "string")
      .map((r) => ({ name: r.name as string, trigger: r.trigger as string, verb: typeof r.verb === "string" ? r.verb : undefined })),
  };
}

/**
 * generateTypes returns a TypeScript module declaring, for each manifest
 * (say kind "aws.vpc" version 1): `AwsVpcV1` (its kind, version, and the
 * names of its reactions, their triggers and its operation verbs, each
 * keyed by name: `AwsVpcV1.reactions.reconcile`, `AwsVpcV1.triggers.reconcile`,
 * `AwsVpcV1.verbs.rotate`),
 * `AwsVpcV1Spec`, `AwsVpcV1Status`, `AwsVpcV1Config`, `AwsVpcV1<Verb>Input`
 * per operation, types for the schemas' $defs, and `AwsVpcV1Handler`.
 * A schema that is absent gives `Record<string, unknown>`.
 */
export function generateTypes(manifests: ManifestSchemas[], options: GenerateOptions = {}): string {
  const sdk = options.sdkModule ?? "@converge/sdk";
  const blocks: string[] = [];
  const seen = new Set<string>();
  for (const m of manifests) {
    const prefix = `${pascal(m.kind)}V${m.kindVersion}`;
    if (seen.has(prefix)) {
      throw new Error(`kind ${JSON.stringify(m.kind)} version ${m.kindVersion}: appears twice (or its name collides as ${prefix})`);
    }
    seen.add(prefix);
    const named = new Map<string, string>();
    const decl = (suffix: string, schema: unknown, what: string) => {
      const ctx: SchemaContext = { prefix, named, root: schema };
      const doc = docComment(schema, "") || `/** ${what} of ${m.kind} v${m.kindVersion}. */`;
      const t = schema === undefined ? "Record<string, unknown>" : typeOf(schema, ctx);
      const name = prefix + suffix;
      return t.startsWith("{") ? `${doc}\nexport interface ${name} ${t}` : `${doc}\nexport type ${name} = ${t};`;
    };
    const lines: string[] = [];
    const head = m.description ? ` ${m.description.trim().split("\n")[0]}` : "";
    lines.push(`/** Kind ${m.kind}, version ${m.kindVersion}.${head} */\nexport const ${prefix} = ${identity(m)} as const;`);
    lines.push(decl("Spec", m.specSchema, "The spec"));
    lines.push(decl("Status", m.statusSchema, "The status"));
    lines.push(decl("Config", m.configSchema, "The provider config"));
    for (const op of m.operations ?? []) {
      lines.push(decl(`${pascal(op.verb)}Input`, op.inputSchema, `The input of operation ${op.verb}`));
    }
    for (const d of named.values()) {
      lines.push(d);
    }
    if (sdk) {
      lines.push(`/** A handler of ${m.kind} v${m.kindVersion}, typed. */\nexport type ${prefix}Handler = Handler<${prefix}Spec, ${prefix}Status, ${prefix}Config>;`);
    }
    blocks.push(lines.join("\n\n"));
  }
  const header = [
    `// Code generated by converge-ts-types${options.source ? ` from ${options.source}` : ""}. DO NOT EDIT.`,
    "/* eslint-disable */",
  ];
  if (sdk && manifests.length > 0) {
    header.push(`import type { Handler } from ${JSON.stringify(sdk)};`);
  }
  return `${header.join("\n")}\n\n${blocks.join("\n\n")}\n`;
}
