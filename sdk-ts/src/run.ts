// One task, from the handler's call to the report sent to the server. The
// worker and @converge/sdk/testing both run handlers through runTask, so a
// unit test sees exactly the checks (and messages) a worker applies.
import type { Task as TaskMessage } from "../gen/converge/v1/worker_pb.js";
import type { Report } from "./chunk.js";
import { terminal } from "./errors.js";
import { buildResult } from "./result.js";
import type { Handler, JsonObject, Task } from "./task.js";

/**
 * Middleware wraps a handler: it gets the next handler (another
 * middleware's, or the one registered) and returns a handler that runs in
 * its place, so it sees every task and what the handler returned or threw.
 * It may change the task or the result, throw instead, or not call next at
 * all. The SDK checks the result the outermost middleware returns.
 *
 * ```ts
 * const timed: Middleware = (next) => async (task) => {
 *   const t0 = Date.now();
 *   try {
 *     return await next(task);
 *   } finally {
 *     metrics.observe(task.kind, task.reaction, Date.now() - t0);
 *   }
 * };
 * ```
 */
export type Middleware<Spec = JsonObject, Status = JsonObject, Config = JsonObject> = (
  next: Handler<Spec, Status, Config>,
) => Handler<Spec, Status, Config>;

/**
 * checkMiddleware throws a TypeError naming where (e.g. "options.middleware")
 * when list is not an array of functions.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function checkMiddleware(list: unknown, where: string): Middleware<any, any, any>[] {
  if (list === undefined) {
    return [];
  }
  if (!Array.isArray(list)) {
    throw new TypeError(`converge: ${where}: must be an array of functions (next) => handler`);
  }
  list.forEach((m, i) => {
    if (typeof m !== "function") {
      throw new TypeError(`converge: ${where}[${i}]: must be a function (next) => handler, got ${typeof m}`);
    }
  });
  return [...list];
}

/**
 * chain wraps handler in middleware, the first outermost: chain([a, b], h)
 * runs a, which calls b, which calls h. It throws a TypeError naming the
 * middleware (where, e.g. "options.middleware", and its index) that does not
 * return a function.
 */
export function chain(
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  middleware: readonly Middleware<any, any, any>[],
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  handler: Handler<any, any, any>,
  where: string,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
): Handler<any, any, any> {
  let h = handler;
  for (let i = middleware.length - 1; i >= 0; i--) {
    const next = middleware[i](h);
    if (typeof next !== "function") {
      throw new TypeError(`converge: ${where}[${i}] returned ${next === null ? "null" : typeof next}, not a handler function`);
    }
    h = next;
  }
  return h;
}

/**
 * runTask calls handler with the task view makes of m and turns its outcome
 * into the report for the server. It never throws: a throw (of anything) is
 * a failure, transient unless marked terminal; a task that cannot be read
 * and a result that breaks a rule are terminal failures saying why.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function runTask(m: TaskMessage, handler: Handler<any, any, any>, view: () => Task): Promise<Report> {
  let res: unknown;
  let err: unknown;
  let failed = false;
  try {
    let task;
    try {
      task = view();
    } catch (e) {
      throw terminal(e);
    }
    res = await handler(task);
  } catch (e) {
    err = e;
    failed = true;
  }
  try {
    return buildResult(m, res, err, failed);
  } catch (e) {
    // buildResult does not throw; this keeps a bug in it from losing the task.
    return buildResult(m, undefined, e, true);
  }
}
