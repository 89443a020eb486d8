import { fromJson, type DescMessage, type JsonValue, type MessageShape } from "@bufbuild/protobuf";
import { parseAllDocuments } from "yaml";
import { ApplyResourceRequestSchema, type ApplyResourceRequest } from "../gen/converge/v1/control_pb.js";
import {
  KindManifestSchema,
  ProviderConfigSchema,
  ReactorBindingSchema,
  type KindManifest,
  type ProviderConfig,
  type ReactorBinding,
} from "../gen/converge/v1/types_pb.js";

/**
 * Document is one document of a file conctl (and {@link Client.applyDocuments})
 * applies: its "type" names what it is, the other keys are the fields of
 * that type's message, by their proto (snake_case) or JSON names.
 */
export type Document =
  | { type: "manifest"; message: KindManifest; where: string }
  | { type: "providerconfig"; message: ProviderConfig; where: string }
  | { type: "reactorbinding"; message: ReactorBinding; where: string }
  | { type: "resource"; message: ApplyResourceRequest; where: string };

/** The document types, in the order they are applied. */
export const documentTypes = ["manifest", "providerconfig", "reactorbinding", "resource"] as const;

const schemas: Record<Document["type"], DescMessage> = {
  manifest: KindManifestSchema,
  providerconfig: ProviderConfigSchema,
  reactorbinding: ReactorBindingSchema,
  resource: ApplyResourceRequestSchema,
};

/**
 * parseDocuments reads YAML (or JSON) text holding one or more documents
 * separated by "---". Parsing is strict: an unknown type or field, or a
 * value of the wrong shape, throws an Error naming the source, the
 * document and the problem.
 */
export function parseDocuments(text: string, source = "input"): Document[] {
  const out: Document[] = [];
  parseAllDocuments(text).forEach((doc, i) => {
    const line = doc.contents?.range ? lineOf(text, doc.contents.range[0]) : 0;
    const where = `${source}: document ${i + 1}${line ? ` (line ${line})` : ""}`;
    if (doc.errors.length > 0) {
      throw new Error(`${where}: ${doc.errors[0].message}`);
    }
    const value = doc.toJS() as unknown;
    if (value === null || value === undefined) {
      return; // an empty document, e.g. after a trailing "---"
    }
    out.push(toDocument(value, where));
  });
  return out;
}

/** toDocument converts one parsed document (a plain object with "type"). */
export function toDocument(value: unknown, where = "document"): Document {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new Error(`${where}: must be an object with a "type"`);
  }
  const { type, ...fields } = value as Record<string, unknown>;
  if (typeof type !== "string" || !(type in schemas)) {
    throw new Error(`${where}: type: ${JSON.stringify(type)} must be one of ${documentTypes.join(", ")}`);
  }
  const t = type as Document["type"];
  let message: MessageShape<DescMessage>;
  try {
    message = fromJson(schemas[t], toJsonValue(fields));
  } catch (e) {
    throw new Error(`${where} (${t}): ${(e as Error).message}`);
  }
  if (t === "resource" && !(message as ApplyResourceRequest).namespace) {
    (message as ApplyResourceRequest).namespace = "default";
  }
  return { type: t, message, where } as Document;
}

/** toJsonValue turns YAML's values (dates, say) into JSON ones. */
function toJsonValue(v: unknown): JsonValue {
  return JSON.parse(JSON.stringify(v)) as JsonValue;
}

function lineOf(text: string, offset: number): number {
  let line = 1;
  for (let i = 0; i < offset && i < text.length; i++) {
    if (text.charCodeAt(i) === 10) line++;
  }
  return line;
}
