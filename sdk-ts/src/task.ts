import type { Task as TaskMessage } from "../gen/converge/v1/worker_pb.js";
import type { ResourceRef, Rollup as RollupMessage } from "../gen/converge/v1/types_pb.js";
import type { Ref } from "./compose.js";
import { taskEvent, type EventTypeName, type TaskEvent } from "./event.js";
import { decodeObject } from "./json.js";
import type { Result } from "./result.js";

/** A JSON object, as specs, statuses, configs and inputs are on the wire. */
export type JsonObject = Record<string, unknown>;

/**
 * Task is one unit of work the server asks a handler to do: run a reaction
 * of a kind for one resource. Spec, Status and Config are the types the
 * handler expects (e.g. interfaces made by `converge-ts-types`); the SDK
 * parses the JSON but does not check it against them (the server checked
 * the spec against the kind's spec_schema).
 */
export interface Task<Spec = JsonObject, Status = JsonObject, Config = JsonObject> {
  /** kind, kindVersion and reaction select the handler. */
  kind: string;
  kindVersion: number;
  reaction: string;
  /**
   * What fired the reaction, e.g. "specChange", or "observe" for a resource
   * whose management policy is observe (see {@link observing}).
   */
  trigger: string;

  /** namespace, name and uid identify the resource. */
  namespace: string;
  name: string;
  uid: string;
  /** Counts real changes to the resource's spec. */
  generation: number;
  labels: Record<string, string>;
  /** The resource's spec; an empty object when it has none. */
  spec: Spec;
  /** The last status applied to the resource; undefined when none has been reported yet. */
  status: Status | undefined;
  /**
   * The last status a handler reported for the resource that its kind's
   * status_schema refused (that task failed terminally); undefined when there
   * is none, or a conforming status was applied since. It records what the
   * handler said it created: a teardown reads it to remove what `status` does
   * not name.
   */
  rejectedStatus: JsonObject | undefined;
  /**
   * The existing external object the resource adopts (its `import.id`), on
   * every task of a resource that names one; undefined otherwise. A handler
   * that does not manage the object yet adopts it instead of creating one,
   * and throws {@link importNotFound} when no object has that id.
   */
  importId: string | undefined;
  /**
   * True when the task only observes its resource: its management policy is
   * observe (trigger "observe"), so the handler reads what exists (looking
   * it up by importId or its last status) and reports it, creating,
   * changing and deleting nothing.
   */
  observing: boolean;

  /** 1 for the first attempt at this generation. */
  attempt: number;
  /**
   * Stable across redeliveries of the same piece of work (a retry, a
   * reassignment) and different between pieces of work: a forced reconcile
   * or a resync at an unchanged generation gets a new one; an operation's
   * is its id, a reactor delivery's its event. Use it to make side effects
   * idempotent.
   */
  dedupToken: string;
  /** When the server gives up on this attempt; undefined when it set none. */
  deadline: Date | undefined;
  /**
   * Aborted when the server cancels the task (or, after a reconnect,
   * reports its lease lost), when the deadline passes, and when a drain
   * outlasts the drain timeout. Pass it to fetch and other cancellable calls.
   */
  signal: AbortSignal;

  /**
   * The resource's effective provider config: its kind version's default
   * config with the keys of the resource's named config, if any, on top;
   * undefined when there is neither.
   */
  config: Config | undefined;

  /** Summarises the composite's children, for a childrenSettled reaction. */
  rollup: Rollup | undefined;
  /** The operation to run, for an operation reaction. */
  operation: Operation | undefined;
  /** What happened to the watched resource, for a reactor reaction. */
  reactor: ReactorEvent | undefined;
  /**
   * The W3C traceparent of the server's span for this task, when the change
   * behind it was traced and sampled; undefined otherwise. The SDK does no
   * tracing itself: a middleware can start the handler's span under it with
   * `@opentelemetry/api` (see docs/debugging.md, "Traces").
   */
  traceparent: string | undefined;
  /**
   * True for a preview task of a plan (`conctl plan`, ControlService
   * PlanChange): the server wants to know what the handler would answer for
   * the spec a change would give the resource, and never applies the result.
   * A handler with side effects must skip them and answer what it would
   * report; a composer just composes.
   */
  preview: boolean;
  /**
   * event records an event on the task's resource now, while the task runs,
   * rather than with its result: for what the resource's owner should see
   * before the task ends, e.g. that the handler is about to replace an
   * object. The server records it only while the task's lease is current,
   * and at most 10 per attempt (one more, a Warning, says the rest were
   * dropped); an event the server drops is not an error here.
   *
   * It does not wait for the server: it queues the event for the stream, in
   * order before the task's result. It throws an Error for an invalid type,
   * reason (UpperCamelCase, at most 63 characters) or message (at most 4,096
   * characters), and when too many events wait for the stream already. A
   * preview's events go nowhere; `taskFor`'s are kept for `eventsOf`.
   */
  event(type: EventTypeName, reason: string, message?: string): void;
}

/**
 * Handler runs one task and returns the outcome to report: a result (or
 * nothing, which leaves the resource's status as it was) is a success; a
 * thrown error is a failure, transient unless marked with `terminal()`.
 */
export type Handler<Spec = JsonObject, Status = JsonObject, Config = JsonObject> = (
  task: Task<Spec, Status, Config>,
) => HandlerResult<Status>;

/** What a {@link Handler} returns: a result or nothing, now or as a promise. */
export type HandlerResult<Status = JsonObject> = Promise<Result<Status> | void | undefined> | Result<Status> | void | undefined;

/**
 * Rollup summarises a composite's children for a childrenSettled reaction:
 * how many are in each phase, and the deepest descendants that keep the
 * composite from being Ready. It is bounded, not the whole subtree.
 */
export interface Rollup {
  /** Live children; Orphaned and Quarantined ones are counted in excluded instead. */
  total: number;
  ready: number;
  reconciling: number;
  degraded: number;
  failed: number;
  deleting: number;
  excluded: number;
  /** At most ten descendants that keep the composite from being Ready, failed ones first. */
  culprits: Culprit[];
}

/** Culprit is a descendant that keeps a composite from being Ready. */
export interface Culprit {
  resource: Ref;
  /** e.g. "Failed" or "Degraded". */
  phase: string;
  /** Why, e.g. the descendant's failure message. */
  message: string;
  /** The composites between the rollup's composite and the culprit, top down; empty for a direct child. */
  path: Ref[];
}

/**
 * Operation is a verb an operator invoked on a resource, for a reaction
 * triggered by "operation". The server has checked the input against the
 * verb's input schema. Report the output in {@link Result.output}; like any
 * task an operation may run more than once, so key its effects by id.
 */
export interface Operation<Input = JsonObject> {
  /** Identifies the operation; the same on every attempt. */
  id: string;
  verb: string;
  /** The verb's input; undefined when none was given. */
  input: Input | undefined;
}

/** The transitions a reactor binding watches for, in {@link ReactorEvent.transition}. */
export const Transition = {
  Created: "created",
  Synced: "synced",
  Degraded: "degraded",
  Failed: "failed",
  Deleted: "deleted",
} as const;

/**
 * ReactorEvent is what a reactor reaction is told: a resource matched by a
 * reactor binding went through a transition. A reactor acts on it and
 * returns nothing, or throws: a transient error has the server deliver the
 * event again later. Delivery is at least once: key side effects by
 * {@link Task.dedupToken}.
 */
export interface ReactorEvent {
  binding: string;
  /** One of the {@link Transition} values. */
  transition: string;
  watched: Ref;
  watchedKindVersion: number;
  watchedGeneration: number;
  /** The watched resource's phase when it happened, e.g. "Ready". */
  watchedPhase: string;
  /** The watched resource's status when it happened; undefined when it had none. */
  watchedStatus: JsonObject | undefined;
}

/**
 * newTask converts a wire task into the handler's view of it; its events
 * go to events. It throws an Error naming the field when the server sent
 * JSON that does not parse.
 */
export function newTask(m: TaskMessage, signal: AbortSignal, events?: (e: TaskEvent) => void): Task {
  const r = m.resource;
  const where = `${m.kind} ${r?.namespace ?? ""}/${r?.name ?? ""}`;
  const decode = (field: string, b: Uint8Array | undefined) => decodeObject(`converge: decode ${field} of ${where}`, b);
  return {
    kind: m.kind,
    kindVersion: m.kindVersion,
    reaction: m.reaction,
    trigger: m.trigger,
    namespace: r?.namespace ?? "",
    name: r?.name ?? "",
    uid: r?.uid ?? "",
    generation: Number(r?.generation ?? 0n),
    labels: { ...(r?.labels ?? {}) },
    spec: decode("spec", r?.spec) ?? {},
    status: decode("status", r?.status),
    rejectedStatus: decode("rejected status", r?.rejectedStatus),
    importId: r?.importId || undefined,
    observing: m.trigger === "observe",
    attempt: m.attempt,
    dedupToken: m.dedupToken,
    traceparent: m.traceparent || undefined,
    preview: m.preview,
    event: taskEvent(where, m.preview, events),
    deadline: m.deadline ? new Date(Number(m.deadline.seconds) * 1000 + Math.floor(m.deadline.nanos / 1e6)) : undefined,
    signal,
    config: decode("config", m.config),
    rollup: m.rollup ? newRollup(m.rollup) : undefined,
    operation: m.operation
      ? { id: m.operation.id, verb: m.operation.verb, input: decode("operation input", m.operation.input) }
      : undefined,
    reactor: m.reactor
      ? {
          binding: m.reactor.binding,
          transition: m.reactor.transition,
          watched: refOf(m.reactor.watched),
          watchedKindVersion: m.reactor.watchedKindVersion,
          watchedGeneration: Number(m.reactor.watchedGeneration),
          watchedPhase: m.reactor.watchedPhase,
          watchedStatus: decode("watched status", m.reactor.watchedStatus),
        }
      : undefined,
  };
}

function newRollup(m: RollupMessage): Rollup {
  return {
    total: m.total,
    ready: m.ready,
    reconciling: m.reconciling,
    degraded: m.degraded,
    failed: m.failed,
    deleting: m.deleting,
    excluded: m.excluded,
    culprits: m.culprits.map((c) => ({
      resource: refOf(c.resource),
      phase: c.phase,
      message: c.message,
      path: c.path.map(refOf),
    })),
  };
}

function refOf(m: ResourceRef | undefined): Ref {
  const r: Ref = { kind: m?.kind ?? "", name: m?.name ?? "" };
  if (m?.namespace) {
    r.namespace = m.namespace;
  }
  return r;
}
