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
 * and has it as its `cause`.
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
