// What a handler's task comes to, read back from the messages the worker
// sends: runHandler runs a handler through the worker's own code path.
import type { ResourceRef } from "../../gen/converge/v1/types_pb.js";
import type { ComposeChunk, Composition, TaskResult } from "../../gen/converge/v1/worker_pb.js";
import type { Child, Edge, Flow, Ref } from "../compose.js";
import { decodeObject } from "../json.js";
import type { Condition, ConditionStatus } from "../result.js";
import { chain, checkMiddleware, runTask, type Middleware } from "../run.js";
import type { HandlerResult, JsonObject, Task } from "../task.js";
import { testLease, wireTask } from "./task.js";

/**
 * Outcome is what the worker reports for a task, as the server would read
 * it: a success with what it carries, or a failure with its message.
 */
export type Outcome<Status = JsonObject> = SuccessOutcome<Status> | FailureOutcome;

/** A success; fields the result did not carry are absent. */
export interface SuccessOutcome<Status = JsonObject> {
  ok: true;
  status?: Status;
  unhealthy?: true;
  conditions?: Condition[];
  /** Set for a composer's answer, with children, edges and references (each possibly empty). */
  compose?: true;
  /** The whole desired set, every part of a large composition put together; a child without a spec has {}. */
  children?: Child[];
  edges?: Edge[];
  references?: Ref[];
  output?: JsonObject;
}

/** A failure: the message reported (a bad result's is the SDK's, naming the problem), and whether it is terminal. */
export interface FailureOutcome {
  ok: false;
  message: string;
  terminal: boolean;
}

/** Options of {@link runHandler}. */
export interface RunOptions {
  /** Wraps the handler, as the worker's and the reaction's middleware do; the first is outermost. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  middleware?: Middleware<any, any, any>[];
}

/**
 * runHandler runs handler on task exactly as a worker does, checks
 * included, and returns the outcome the worker would report: a thrown
 * error is a failure (terminal when marked with `terminal()`), and a result
 * the server would refuse, say a composer's child with a bad name, is a
 * terminal failure with the message a worker would send. It does not
 * throw for anything the handler does.
 *
 * ```ts
 * const out = await runHandler(reconcileHello, taskFor(manifest, "reconcile", { name: "" }));
 * assert.deepEqual(out, { ok: false, message: "spec.name is empty", terminal: true });
 * ```
 */
export async function runHandler<Spec, Status, Config>(
  handler: (task: Task<Spec, Status, Config>) => HandlerResult<NoInfer<Status>>,
  task: Task<NoInfer<Spec>, NoInfer<Status>, NoInfer<Config>>,
  options: RunOptions = {},
): Promise<Outcome<Status>> {
  const where = "runHandler: options.middleware";
  const h = chain(checkMiddleware(options.middleware, where), handler, where);
  const view = task as unknown as Task;
  const m = wireTask(view, testLease(view), "converge: runHandler: task");
  const rep = await runTask(m, h, () => view);
  return outcomeOf<Status>(rep.result, rep.chunks);
}

/**
 * outcomeOf reads a task's result, with the composition chunks sent before
 * it, as the server would. It throws for a result with no outcome.
 */
export function outcomeOf<Status = JsonObject>(r: TaskResult, chunks: readonly ComposeChunk[] = []): Outcome<Status> {
  const o = r.outcome;
  if (o.case === "error") {
    return { ok: false, message: o.value.message, terminal: o.value.terminal };
  }
  if (o.case !== "success") {
    throw new Error(`converge: result for task ${r.lease?.taskId ?? "?"} has no outcome`);
  }
  const s = o.value;
  const out: SuccessOutcome<Status> = { ok: true };
  const status = decodeObject("status", s.status);
  if (status !== undefined) out.status = status as Status;
  if (s.unhealthy) out.unhealthy = true;
  if (s.conditions.length > 0) {
    out.conditions = s.conditions.map((c) => {
      const cond: Condition = { type: c.type, status: c.status as ConditionStatus };
      if (c.reason) cond.reason = c.reason;
      if (c.message) cond.message = c.message;
      return cond;
    });
  }
  if (s.composition) {
    const parts: Composition[] = [...chunks].sort((a, b) => a.index - b.index).flatMap((c) => (c.part ? [c.part] : []));
    parts.push(s.composition);
    out.compose = true;
    out.children = parts.flatMap((p) => p.children).map((c) => {
      const child: Child = { kind: c.kind, kindVersion: c.kindVersion, name: c.name, spec: decodeObject("child spec", c.spec) ?? {} };
      if (Object.keys(c.labels).length > 0) child.labels = { ...c.labels };
      return child;
    });
    out.edges = parts.flatMap((p) => p.edges).map((e) => ({
      dependent: refOf(e.dependent),
      dependency: refOf(e.dependency),
      flows: e.flows.map((f): Flow => (f.source.case === "expr" ? { expr: f.source.value, to: f.to } : { from: f.source.value ?? "", to: f.to })),
    }));
    out.references = parts.flatMap((p) => p.references).map(refOf);
  }
  const output = decodeObject("output", s.operationOutput);
  if (output !== undefined) out.output = output;
  return out;
}

function refOf(r: ResourceRef | undefined): Ref {
  return r?.namespace ? { namespace: r.namespace, kind: r.kind, name: r.name } : { kind: r?.kind ?? "", name: r?.name ?? "" };
}
