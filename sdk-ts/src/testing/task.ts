// Tasks for tests: taskFor builds the task a worker would hand a handler
// from a kind manifest, and wireTask turns a task back into the message the
// server sends, for the fake server and for running the worker's checks.
import { create } from "@bufbuild/protobuf";
import type { KindManifest } from "../../gen/converge/v1/types_pb.js";
import { LeaseSchema, TaskSchema, type Lease, type Task as TaskMessage } from "../../gen/converge/v1/worker_pb.js";
import type { Ref } from "../compose.js";
import { parseDocuments, toDocument } from "../documents.js";
import { messageOf } from "../errors.js";
import { encodeObject } from "../json.js";
import { checkKind, checkKindVersion } from "../names.js";
import type { TaskEvent } from "../event.js";
import { newTask, type JsonObject, type ReactorEvent, type Rollup, type Task } from "../task.js";

/**
 * A kind manifest for {@link taskFor}: YAML (or JSON) text as applied with
 * `conctl apply -f` (other documents in it are ignored), a plain object with
 * the manifest's fields (proto or JSON names), or a KindManifest message.
 */
export type ManifestInput = string | KindManifest | Record<string, unknown>;

/** Options of {@link taskFor}: the task's fields, each with a default. */
export interface TaskOptions<Status = JsonObject, Config = JsonObject> {
  /** Picks the manifest when the text holds several. */
  kind?: string;
  /** Picks the manifest when the text holds several versions of the kind. */
  kindVersion?: number;
  /** Default "default". */
  namespace?: string;
  /** Default "test". */
  name?: string;
  /** Default "uid-" and the name. */
  uid?: string;
  /** Default 1. */
  generation?: number;
  labels?: Record<string, string>;
  /** The resource's current status; default none. */
  status?: Status;
  rejectedStatus?: JsonObject;
  /** The id of the existing object the resource imports; default none. */
  importId?: string;
  /** The effective provider config; default none. */
  config?: Config;
  /** Default the reaction's trigger in the manifest. */
  trigger?: string;
  /** Default 1. */
  attempt?: number;
  /** Default one made of the task's kind, name, trigger and generation. */
  dedupToken?: string;
  /** The W3C traceparent the server sent; default none. */
  traceparent?: string;
  /** Whether the task is a plan's preview; default false. */
  preview?: boolean;
  deadline?: Date;
  /** The task's signal; default one that never aborts. */
  signal?: AbortSignal;
  /** For a childrenSettled reaction; counts left out are 0. */
  rollup?: Partial<Rollup>;
  /** For an operation reaction (the verb is the reaction's); default id "op-1", input {}. */
  operation?: { id?: string; input?: JsonObject };
  /** For a reactor reaction; default binding "test", transition "synced", watched the task's kind and name. */
  reactor?: Partial<ReactorEvent>;
}

const never = new AbortController().signal;

/** A task made without a spec has an empty one. */
type SpecOf<S> = [S] extends [undefined] ? JsonObject : S;

/**
 * taskFor builds the task the worker would give a handler of reaction of
 * the manifest's kind, with spec and the options' fields on top of
 * defaults: the same object a worker makes from the server's message (the
 * spec, status and config go through JSON as on the wire).
 *
 * ```ts
 * const t = taskFor(readFileSync("kinds.yaml", "utf8"), "reconcile", { name: "Ada" }, { kind: "hello" });
 * ```
 *
 * It throws an Error naming the problem for a manifest that does not parse
 * (fields are checked as conctl reads them; the server checks the rest), an
 * unknown reaction (listing the declared ones), and a
 * spec, status or config that is not a JSON object. The spec is not checked
 * against the kind's spec_schema (the server does that).
 */
export function taskFor<Spec = JsonObject, Status = JsonObject, Config = JsonObject>(
  manifest: ManifestInput,
  reaction: string,
  spec?: Spec,
  options: TaskOptions<NoInfer<Status>, NoInfer<Config>> = {},
): Task<SpecOf<Spec>, Status, Config> {
  const m = pickManifest(manifest, options);
  const r = m.reactions.find((x) => x.name === reaction);
  if (!r) {
    const names = m.reactions.map((x) => x.name).join(", ") || "none";
    throw new Error(`converge: taskFor: kind ${JSON.stringify(m.kind)} v${m.kindVersion} declares no reaction ${JSON.stringify(reaction)} (it declares: ${names})`);
  }
  const o = options;
  const trigger = o.trigger ?? r.trigger;
  const name = o.name ?? "test";
  const generation = o.generation ?? 1;
  const reactor = trigger === "reactor";
  const draft: Omit<Task, "event"> = {
    kind: m.kind,
    kindVersion: m.kindVersion,
    reaction,
    trigger,
    // A reactor task carries no resource: it is about the watched one.
    namespace: reactor ? "" : (o.namespace ?? "default"),
    name: reactor ? "" : name,
    uid: reactor ? "" : (o.uid ?? `uid-${name}`),
    generation: reactor ? 0 : generation,
    labels: reactor ? {} : { ...(o.labels ?? {}) },
    spec: (spec ?? {}) as JsonObject,
    status: o.status as JsonObject | undefined,
    rejectedStatus: o.rejectedStatus,
    importId: o.importId,
    observing: trigger === "observe",
    attempt: o.attempt ?? 1,
    dedupToken: o.dedupToken ?? `test/${m.kind}/${name}/${trigger}/${generation}`,
    traceparent: o.traceparent,
    preview: o.preview ?? false,
    deadline: o.deadline,
    signal: o.signal ?? never,
    config: o.config as JsonObject | undefined,
    rollup:
      trigger === "childrenSettled" || o.rollup
        ? { total: 0, ready: 0, reconciling: 0, degraded: 0, failed: 0, deleting: 0, excluded: 0, culprits: [], ...o.rollup }
        : undefined,
    operation:
      trigger === "operation" || o.operation ? { id: o.operation?.id ?? "op-1", verb: r.verb, input: o.operation?.input ?? {} } : undefined,
    reactor:
      reactor || o.reactor
        ? {
            binding: "test",
            transition: "synced",
            watched: { kind: m.kind, name },
            watchedKindVersion: m.kindVersion,
            watchedGeneration: generation,
            watchedPhase: "Ready",
            watchedStatus: undefined,
            ...o.reactor,
          }
        : undefined,
  };
  if (reactor && spec !== undefined && Object.keys(spec as object).length > 0) {
    throw new Error("converge: taskFor: a reactor task carries no resource, so no spec: pass undefined and set options.reactor");
  }
  const wire = wireTask(draft, testLease(draft), "converge: taskFor");
  const events: TaskEvent[] = [];
  const task = newTask(wire, draft.signal, (e) => events.push(e));
  recorded.set(task, events);
  return task as Task<SpecOf<Spec>, Status, Config>;
}

/** The events of the tasks taskFor built, by task. */
const recorded = new WeakMap<Task, TaskEvent[]>();

/**
 * eventsOf returns the events a handler recorded with `task.event` on a
 * task {@link taskFor} built, oldest first, as the worker would have sent
 * them (a preview's record nothing); an empty list for any other task. A
 * worker run against a FakeServer sends them as taskEvent messages.
 */
export function eventsOf(task: Task): TaskEvent[] {
  return [...(recorded.get(task) ?? [])];
}

function pickManifest(input: ManifestInput, o: TaskOptions<unknown, unknown>): KindManifest {
  let all: KindManifest[];
  if (typeof input === "string") {
    all = parseDocuments(input, "taskFor manifest").flatMap((d) => (d.type === "manifest" ? [d.message] : []));
  } else if (input !== null && typeof input === "object" && "$typeName" in input) {
    all = [input as KindManifest];
  } else if (input !== null && typeof input === "object") {
    const { type, ...fields } = input as Record<string, unknown>;
    if (type !== undefined && type !== "manifest") {
      throw new Error(`converge: taskFor: manifest: type is ${JSON.stringify(type)}, want "manifest" or none`);
    }
    const d = toDocument({ ...fields, type: "manifest" }, "taskFor manifest");
    all = [d.message as KindManifest];
  } else {
    throw new TypeError(`converge: taskFor: manifest must be YAML text, a manifest object or a KindManifest, got ${input === null ? "null" : typeof input}`);
  }
  const list = (ms: KindManifest[]) => ms.map((m) => `${m.kind} v${m.kindVersion}`).join(", ") || "none";
  const picked = all.filter((m) => (o.kind === undefined || m.kind === o.kind) && (o.kindVersion === undefined || m.kindVersion === o.kindVersion));
  if (picked.length !== 1) {
    const want = o.kind === undefined ? "" : ` of kind ${JSON.stringify(o.kind)}${o.kindVersion === undefined ? "" : ` v${o.kindVersion}`}`;
    const hint = picked.length > 1 ? ": pick one with options.kind (and options.kindVersion)" : "";
    throw new Error(`converge: taskFor: ${picked.length} manifests${want} among ${list(all)}, want exactly one${hint}`);
  }
  const m = picked[0];
  const problem = checkKind(m.kind) ?? checkKindVersion(m.kindVersion);
  if (problem) {
    throw new Error(`converge: taskFor: manifest: ${problem}`);
  }
  return m;
}

/** testLease is the lease of a task run outside a worker. */
export function testLease(t: Pick<Task, "generation">, taskId = 1n): Lease {
  const g = Number.isSafeInteger(t.generation) && t.generation > 0 ? BigInt(t.generation) : 0n;
  return create(LeaseSchema, { taskId, epoch: 1n, generation: g });
}

/**
 * wireTask is the message the server would send for task t under lease: the
 * inverse of the worker's reading of it. It throws an Error starting with
 * where for a spec, status or config that is not a JSON object.
 */
export function wireTask(t: Omit<Task, "event">, lease: Lease, where = "converge: task"): TaskMessage {
  const enc = (field: string, v: unknown) => {
    try {
      return encodeObject(v, Number.MAX_SAFE_INTEGER);
    } catch (e) {
      throw new Error(`${where}: ${field}: ${messageOf(e)}`);
    }
  };
  const ms = t.deadline?.getTime();
  return create(TaskSchema, {
    lease,
    kind: t.kind,
    kindVersion: t.kindVersion,
    reaction: t.reaction,
    trigger: t.trigger,
    attempt: t.attempt,
    dedupToken: t.dedupToken,
    traceparent: t.traceparent ?? "",
    preview: t.preview,
    deadline: ms === undefined ? undefined : { seconds: BigInt(Math.floor(ms / 1000)), nanos: (ms % 1000) * 1e6 },
    resource: t.reactor
      ? undefined
      : {
          namespace: t.namespace,
          name: t.name,
          uid: t.uid,
          generation: lease.generation,
          labels: { ...t.labels },
          spec: enc("spec", t.spec) ?? enc("spec", {}),
          status: enc("status", t.status),
          rejectedStatus: enc("rejectedStatus", t.rejectedStatus),
          importId: t.importId ?? "",
        },
    config: enc("config", t.config),
    rollup: t.rollup
      ? {
          ...t.rollup,
          culprits: t.rollup.culprits.map((c) => ({ ...c, resource: refMessage(c.resource), path: c.path.map(refMessage) })),
        }
      : undefined,
    operation: t.operation ? { id: t.operation.id, verb: t.operation.verb, input: enc("operation.input", t.operation.input) } : undefined,
    reactor: t.reactor
      ? {
          binding: t.reactor.binding,
          transition: t.reactor.transition,
          watched: refMessage(t.reactor.watched),
          watchedKindVersion: t.reactor.watchedKindVersion,
          watchedGeneration: BigInt(Math.trunc(t.reactor.watchedGeneration || 0)),
          watchedPhase: t.reactor.watchedPhase,
          watchedStatus: enc("reactor.watchedStatus", t.reactor.watchedStatus),
        }
      : undefined,
  });
}

function refMessage(r: Ref | undefined) {
  return { namespace: r?.namespace ?? "", kind: r?.kind ?? "", name: r?.name ?? "" };
}
