// A marker shared by every copy of this package, so an error made terminal
// by one copy (say, a library's own dependency) is still terminal here.
const terminalMark = Symbol.for("converge.sdk.terminal");

/**
 * An error marked terminal with {@link terminal}. Its message is the wrapped
 * error's, and `cause` is the wrapped error.
 */
export class TerminalError extends Error {
  readonly [terminalMark] = true;
  constructor(cause: unknown) {
    super(messageOf(cause), { cause });
    this.name = "TerminalError";
  }
}

/**
 * Marks err as terminal: retrying will not help, so the server pins the
 * resource as Failed for its current generation instead of retrying. The
 * resource is retried again once its spec changes or an operator forces a
 * reconcile. Errors that are not marked terminal are transient and retried
 * with backoff.
 *
 * Throw the result from a handler:
 *
 * ```ts
 * if (!spec.name) throw terminal(new Error("spec.name is empty"));
 * ```
 *
 * A string is taken as the message. The returned error keeps err's message
 * and has it as its `cause`. It composes with {@link withReason}; a terminal
 * error must not carry {@link retryAfter}.
 */
export function terminal(err: unknown): TerminalError {
  return err instanceof TerminalError ? err : new TerminalError(err);
}

/**
 * Reports whether err, or any error in its `cause` chain, was marked with
 * {@link terminal}.
 */
export function isTerminal(err: unknown): boolean {
  const seen = new Set<unknown>();
  for (let e = err; e !== null && typeof e === "object" && !seen.has(e); e = (e as { cause?: unknown }).cause) {
    if ((e as Record<symbol, unknown>)[terminalMark] === true) {
      return true;
    }
    seen.add(e);
  }
  return false;
}

// Markers shared by every copy of this package, like terminalMark.
const reasonMark = Symbol.for("converge.sdk.reason");
const retryAfterMark = Symbol.for("converge.sdk.retryAfter");

/**
 * An error carrying a reason code, made by {@link withReason}. Its message
 * is the wrapped error's, and `cause` is the wrapped error.
 */
export class ReasonError extends Error {
  readonly [reasonMark]: string;
  constructor(code: string, cause: unknown) {
    super(messageOf(cause), { cause });
    this.name = "ReasonError";
    this[reasonMark] = code;
  }
  /** The reason code. */
  get code(): string {
    return this[reasonMark];
  }
}

/**
 * Attaches a machine-readable reason code to a handler's error, e.g.
 * `withReason("QuotaExceeded", err)`. The server records it with the
 * failure: it is the reason of the resource's Ready and Synced conditions,
 * shown by conctl get and describe, and a label of the task-completion
 * metric.
 *
 * A code is CamelCase: an upper-case letter, then letters and digits, at
 * most 63 characters (the protocol's rule). A task whose error carries an
 * invalid code fails terminally with a message naming the rule.
 *
 * It composes with {@link terminal} and {@link retryAfter} in any order:
 *
 * ```ts
 * throw terminal(withReason("InvalidRegion", new Error(`no region ${spec.region}`)));
 * ```
 *
 * Of several codes in the cause chain, the outermost wins.
 */
export function withReason(code: string, err: unknown): ReasonError {
  return new ReasonError(code, err);
}

/** Returns the code attached with {@link withReason} to err or its `cause` chain; "" when there is none. */
export function reasonOf(err: unknown): string {
  const found = findMark(err, reasonMark);
  return typeof found === "string" ? found : "";
}

/**
 * An error asking for a retry delay, made by {@link retryAfter}. Its message
 * is the wrapped error's, and `cause` is the wrapped error.
 */
export class RetryAfterError extends Error {
  readonly [retryAfterMark]: number;
  constructor(ms: number, cause: unknown) {
    super(messageOf(cause), { cause });
    this.name = "RetryAfterError";
    this[retryAfterMark] = ms;
  }
  /** The delay, in milliseconds. */
  get ms(): number {
    return this[retryAfterMark];
  }
}

/**
 * Asks the server to retry a transiently failed task no sooner than ms
 * milliseconds from now, instead of after its exponential backoff: for a
 * handler that knows when trying again makes sense (a rate limit's reset, a
 * Retry-After header). ms must be more than 0 and at most 24 hours.
 *
 * It is for transient failures only: a task whose error is both
 * {@link terminal} and retryAfter, or whose delay is out of range, fails
 * terminally with a message naming the rule. The attempt still counts
 * towards the kind's max_transient_attempts.
 *
 * ```ts
 * throw retryAfter(60_000, withReason("Throttled", err));
 * ```
 */
export function retryAfter(ms: number, err: unknown): RetryAfterError {
  return new RetryAfterError(ms, err);
}

/** Returns the delay in ms attached with {@link retryAfter} to err or its `cause` chain, or undefined. */
export function retryAfterOf(err: unknown): number | undefined {
  const found = findMark(err, retryAfterMark);
  // A mark that is not a number (a forged one) reads as NaN, which the
  // protocol's rules refuse rather than drop silently.
  return found === undefined ? undefined : typeof found === "number" ? found : NaN;
}

/** findMark returns the value of mark on the outermost error of err's cause chain that has it. */
function findMark(err: unknown, mark: symbol): unknown {
  const seen = new Set<unknown>();
  for (let e = err; e !== null && typeof e === "object" && !seen.has(e); e = (e as { cause?: unknown }).cause) {
    const v = (e as Record<symbol, unknown>)[mark];
    if (v !== undefined) {
      return v;
    }
    seen.add(e);
  }
  return undefined;
}

/** messageOf renders anything thrown as a message. */
export function messageOf(err: unknown): string {
  if (err instanceof Error) {
    return err.message;
  }
  if (typeof err === "string") {
    return err;
  }
  try {
    return String(err);
  } catch {
    return "a value that cannot be printed";
  }
}

/** The reason of an {@link importNotFound} failure. */
export const importNotFoundReason = "ImportNotFound";

/**
 * The failure a handler throws when the object its resource imports
 * ({@link Task.importId}) does not exist: terminal (a retry would not make
 * it exist), with reason ImportNotFound, and a message naming the id;
 * detail, if given, says what the lookup found.
 *
 * ```ts
 * if (!(await cloud.vpcExists(task.importId))) throw importNotFound(task.importId);
 * ```
 */
export function importNotFound(id: string, detail?: unknown): TerminalError {
  let msg = `import: no object with id ${JSON.stringify(id)} exists`;
  if (detail !== undefined) {
    msg += `: ${messageOf(detail)}`;
  }
  return terminal(withReason(importNotFoundReason, new Error(msg, { cause: detail })));
}
