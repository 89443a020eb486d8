import { create, fromJson, type JsonObject, type JsonValue, type MessageInitShape } from "@bufbuild/protobuf";
import { ConnectError, createClient, type Client as RpcClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { type TlsFiles, tlsNodeOptions, withNodeOptions } from "./tls.js";
import {
  ApplyResourceRequestSchema,
  ControlService,
  type ApplyResourceRequest,
  type WatchRequestSchema,
  type WatchResponse,
} from "../gen/converge/v1/control_pb.js";
import { KindManifestSchema, type KindManifest, type Resource } from "../gen/converge/v1/types_pb.js";
import { documentTypes, parseDocuments, type Document } from "./documents.js";
import type { PhaseName } from "./phase.js";
import { waitFor } from "./wait.js";
import { serverURL } from "./url.js";
import { follow } from "./watch.js";
import { ReadAfter } from "./readafter.js";

export { defaultBaseUrl } from "./url.js";
export { readAfterHeader } from "./readafter.js";
/** The namespace the server uses when a request names none. */
export const defaultNamespace = "default";

/** Options of a {@link Client}. */
export interface ClientOptions {
  /**
   * The server's URL. Default: the CONVERGE_SERVER environment variable,
   * else {@link defaultBaseUrl} (as for conctl).
   */
  url?: string;
  /** Headers sent with every request, streams included (e.g. Authorization). */
  headers?: Record<string, string>;
  /**
   * A Connect transport to use instead of the default (Connect protocol over
   * HTTP/1.1). Read-your-writes tokens are kept and sent over it too.
   */
  transport?: Transport;
  /**
   * TLS files for the default transport (https:// URLs); fields left out come
   * from CONVERGE_TLS_CA, CONVERGE_TLS_CERT and CONVERGE_TLS_KEY.
   */
  tls?: TlsFiles;
  /**
   * A bearer token sent with every call, for a server started with
   * --token-file; default CONVERGE_TOKEN.
   */
  token?: string;
}

/** A resource to apply: the fields of ApplyResourceRequest, spec as a plain object. */
export interface ResourceInput {
  kind: string;
  kindVersion: number;
  name: string;
  /** Default {@link defaultNamespace}. */
  namespace?: string;
  labels?: Record<string, string>;
  spec?: JsonObject;
  /** "", "delete" or "retain". */
  deletionPolicy?: string;
  /** A named provider config of the kind version. */
  providerConfig?: string;
}

/** Options of {@link Client.waitFor}. */
export interface WaitOptions {
  /** Default {@link defaultNamespace}. */
  namespace?: string;
  /** Gives up when aborted. */
  signal?: AbortSignal;
  /** Gives up after this long. */
  timeoutMs?: number;
  /**
   * Also reads the resource when no change was seen for this long (reads
   * start 100 ms apart and back off to it). By default it reads only when
   * the Watch stream reports a change of the resource, which is enough for
   * anything that changes its phase.
   */
  pollIntervalMs?: number;
}

/**
 * Client calls a Converge server's control API. `rpc` exposes every
 * ControlService RPC as generated; the methods add what programs need on
 * top: applying plain objects and YAML documents, listing every page, a
 * watch that survives broken streams, and waiting for a resource.
 *
 * Errors are ConnectErrors: branch on `err.code` (e.g. Code.NotFound); the
 * server's message names the offending field or rule.
 *
 * A client reads its own writes: it keeps the latest read-your-writes token
 * the server answered it with (header {@link readAfterHeader}, sent by a
 * server with a read replica) and sends it with every later call and
 * stream, `rpc` included, so a read right after a write sees it even when
 * a replica serves the read.
 */
export class Client {
  /** Every ControlService RPC. */
  readonly rpc: RpcClient<typeof ControlService>;
  private readonly readAfter = new ReadAfter();

  /** Throws a TypeError naming its source for an invalid server URL. */
  constructor(options: ClientOptions = {}) {
    const headers = { ...(options.headers ?? {}) };
    const token = options.token ?? process.env.CONVERGE_TOKEN;
    if (token && !Object.keys(headers).some((k) => k.toLowerCase() === "authorization")) {
      headers.Authorization = `Bearer ${token}`;
    }
    const transport =
      options.transport ??
      createConnectTransport({
        baseUrl: serverURL(options.url, "options.url"),
        httpVersion: "1.1",
        ...withNodeOptions(tlsNodeOptions(options.tls)),
        interceptors: [
          (next) => async (req) => {
            for (const [k, v] of Object.entries(headers)) {
              req.header.set(k, v);
            }
            return next(req);
          },
        ],
      });
    this.rpc = createClient(ControlService, this.readAfter.wrap(transport));
  }

  /**
   * The latest read-your-writes token this client was answered with ("" if
   * none yet, as from a server without a read replica). Another client
   * that sends it as the {@link readAfterHeader} header reads what this one
   * wrote.
   */
  get readAfterToken(): string {
    return this.readAfter.latest;
  }

  /**
   * applyKind applies a kind manifest: a KindManifest message, or a plain
   * object with its fields by proto (snake_case) or JSON names, as in a
   * manifest file (a "type" key is ignored). It returns the stored manifest
   * and what happened ("created", "updated", "unchanged").
   */
  async applyKind(manifest: KindManifest | Record<string, unknown>): Promise<{ manifest: KindManifest; result: string }> {
    const m = isMessage(manifest) ? (manifest as KindManifest) : fromJson(KindManifestSchema, plain(manifest));
    const res = await this.rpc.applyKind({ manifest: m });
    return { manifest: res.manifest as KindManifest, result: res.result };
  }

  /** apply creates or updates a resource and returns it with what happened. */
  async apply(r: ResourceInput): Promise<{ resource: Resource; result: string }> {
    const req = create(ApplyResourceRequestSchema, {
      namespace: r.namespace ?? defaultNamespace,
      kind: r.kind,
      kindVersion: r.kindVersion,
      name: r.name,
      labels: r.labels ?? {},
      spec: r.spec ?? {},
      deletionPolicy: r.deletionPolicy ?? "",
      providerConfig: r.providerConfig ?? "",
    });
    const res = await this.rpc.applyResource(req);
    return { resource: res.resource as Resource, result: res.result };
  }

  /**
   * applyDocuments applies documents (parsed with parseDocuments, or YAML
   * text) as conctl apply does: manifests first, then provider configs,
   * reactor bindings and resources. It returns one line per document, e.g.
   * `manifest greeting v1: created`, and stops at the first error, which
   * names the document.
   */
  async applyDocuments(docs: Document[] | string): Promise<string[]> {
    const list = typeof docs === "string" ? parseDocuments(docs) : docs;
    const ordered = [...list].sort((a, b) => documentTypes.indexOf(a.type) - documentTypes.indexOf(b.type));
    const out: string[] = [];
    for (const d of ordered) {
      try {
        out.push(await this.applyDocument(d));
      } catch (e) {
        if (e instanceof ConnectError) {
          throw new ConnectError(`${d.where}: ${e.rawMessage}`, e.code, undefined, undefined, e);
        }
        throw e;
      }
    }
    return out;
  }

  private async applyDocument(d: Document): Promise<string> {
    switch (d.type) {
      case "manifest": {
        const r = await this.rpc.applyKind({ manifest: d.message });
        return `manifest ${d.message.kind} v${d.message.kindVersion}: ${r.result}`;
      }
      case "providerconfig": {
        const r = await this.rpc.applyProviderConfig({ config: d.message });
        return `providerconfig ${d.message.kind} v${d.message.kindVersion} ${d.message.name}: ${r.result}`;
      }
      case "reactorbinding": {
        const r = await this.rpc.applyReactorBinding({ binding: d.message });
        return `reactorbinding ${d.message.name}: ${r.result}`;
      }
      case "resource": {
        const r = await this.rpc.applyResource(d.message as ApplyResourceRequest);
        return `resource ${d.message.kind}/${d.message.name}: ${r.result}`;
      }
    }
  }

  /** get returns a resource; a missing one rejects with Code.NotFound. */
  async get(kind: string, name: string, namespace = defaultNamespace): Promise<Resource> {
    const res = await this.rpc.getResource({ namespace, kind, name });
    return res.resource as Resource;
  }

  /**
   * list returns the resources matching the filter, following every page.
   * Filter fields are those of ListResourcesRequest (namespace, kind,
   * kindVersion, phases, labelSelector); without a filter, all resources.
   */
  async list(
    filter: { namespace?: string; kind?: string; kindVersion?: number; phases?: PhaseName[]; labelSelector?: string } = {},
  ): Promise<Resource[]> {
    const out: Resource[] = [];
    let pageToken = "";
    do {
      const res = await this.rpc.listResources({ ...filter, pageSize: 1000, pageToken });
      out.push(...res.resources);
      pageToken = res.nextPageToken;
    } while (pageToken !== "");
    return out;
  }

  /**
   * delete asks for a resource's deletion (it and what it owns are torn
   * down, dependents first) and returns it as marked for deletion.
   */
  async delete(kind: string, name: string, namespace = defaultNamespace): Promise<Resource | undefined> {
    const res = await this.rpc.deleteResource({ namespace, kind, name });
    return res.resource;
  }

  /**
   * watch streams resource changes matching req (namespace, kind, name,
   * cursor). If the stream breaks after the server registered it, watch
   * reopens it from the last cursor, so no change is lost or repeated. It
   * yields one heartbeat response per opened stream, right after the server
   * registered it (state read before it may be stale), then every response
   * that carries changes. It ends when signal aborts or the consumer stops
   * iterating, and throws when the first stream cannot be opened or the
   * server refuses the request.
   */
  watch(req: MessageInitShape<typeof WatchRequestSchema> = {}, options: { signal?: AbortSignal } = {}): AsyncGenerator<WatchResponse> {
    return follow(this.rpc, req, options.signal);
  }

  /**
   * waitFor resolves with the resource once done(resource) holds. It opens a
   * watch on the resource before it reads it, so no change between the read
   * and the watch is missed, and reads it again after each change. A
   * missing (or deleted) resource rejects with Code.NotFound; a timeout or
   * an aborted signal rejects with an Error saying what the resource last
   * looked like.
   */
  waitFor(kind: string, name: string, done: (r: Resource) => boolean, options: WaitOptions = {}): Promise<Resource> {
    return waitFor(this, kind, name, done, options);
  }

  /** waitForPhase waits until the resource is in one of phases; see {@link waitFor}. */
  waitForPhase(kind: string, name: string, phases: PhaseName | PhaseName[], options: WaitOptions = {}): Promise<Resource> {
    const want = new Set<string>(Array.isArray(phases) ? phases : [phases]);
    return this.waitFor(kind, name, (r) => want.has(r.phase), options);
  }
}




function isMessage(v: unknown): boolean {
  return typeof v === "object" && v !== null && "$typeName" in v;
}

function plain(v: Record<string, unknown>): JsonValue {
  const { type: _type, ...rest } = v;
  return JSON.parse(JSON.stringify(rest)) as JsonValue;
}
