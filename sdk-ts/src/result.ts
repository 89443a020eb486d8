import { create, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import { createValidator, type Validator } from "@bufbuild/protovalidate";
import {
  ComposeChunkSchema,
  SuccessSchema,
  TaskErrorSchema,
  TaskResultSchema,
  type Lease,
  type Success,
  type Task as TaskMessage,
  type TaskError,
  type TaskResult,
} from "../gen/converge/v1/worker_pb.js";
import { DurationSchema, type Duration } from "@bufbuild/protobuf/wkt";
import { ConditionSchema } from "../gen/converge/v1/types_pb.js";
import { attachComposition, sizeOf, type Report } from "./chunk.js";
import { encodeComposition, type Child, type Edge, type Ref } from "./compose.js";
import { isTerminal, messageOf, reasonOf, retryAfterOf } from "./errors.js";
import { boundUTF8, encodeObject } from "./json.js";

// maxErrorBytes bounds the error message reported for a failed task, so one
// verbose handler cannot bloat the stream.
const maxErrorBytes = 32 << 10;
// maxStatusBytes and maxOutputBytes are the server's limits
// (docs/limits.md): a larger status is a terminal failure here rather than
// a message the server refuses, which would break the stream.
const maxStatusBytes = 512 << 10;
const maxOutputBytes = 512 << 10;

/** The values a {@link Condition}'s status may take. */
export type ConditionStatus = "True" | "False" | "Unknown";

/**
 * Condition is one observation about a resource, e.g. that it is reachable.
 * An invalid condition is reported as a terminal failure naming the field.
 */
export interface Condition {
  /** A letter, then letters, digits, '_', '.' or '-'; at most 63 characters. */
  type: string;
  status: ConditionStatus;
  /** A short machine-readable cause, at most 128 characters. */
  reason?: string;
  /** For humans, at most 32768 characters. */
  message?: string;
}

/**
 * Result is what a successful handler reports. A reactor reports nothing:
 * it returns undefined.
 */
export interface Result<Status = unknown> {
  /**
   * Becomes the resource's status: a value that JSON-encodes to an object of
   * at most 512 KiB (or a Uint8Array holding such JSON). Absent or null
   * leaves the status as it was. Anything else is a terminal failure naming
   * the problem. The server validates it against the kind's status_schema.
   */
  status?: Status;
  /** The resource exists but is not healthy; its phase becomes Degraded. */
  unhealthy?: boolean;
  conditions?: Condition[];

  /**
   * Marks the result as a composer's answer, even when children is empty:
   * the server makes the composite's children match children exactly, so an
   * empty set prunes every child. A result with any children, edges or
   * references is a composer's answer either way. A composer should always
   * set it.
   */
  compose?: boolean;
  /**
   * The complete desired set of the composite's children. Any number may be
   * returned: the SDK sends a large set in parts.
   */
  children?: Child[];
  /** Dependencies among the children, and on references, with value flows. */
  edges?: Edge[];
  /** Resources outside the composite that edges may name as dependencies. */
  references?: Ref[];

  /**
   * An operation's output, for an operation reaction: a value that
   * JSON-encodes to an object of at most 512 KiB. An output for a task that
   * runs no operation is a terminal failure.
   */
  output?: unknown;
}

let validator: Validator | undefined;

/** validate checks a message against the protocol's rules; undefined when it passes, else why not. */
export function validate<Desc extends DescMessage>(schema: Desc, m: MessageShape<Desc>): string | undefined {
  validator ??= createValidator();
  const r = validator.validate(schema, m);
  return r.kind === "valid" ? undefined : r.error.message;
}

/**
 * buildResult turns a handler's outcome for task t into what is reported to
 * the server. It never throws: a result that cannot be encoded or does not
 * meet the protocol's rules becomes a terminal error that says why, so a bad
 * result can never poison the stream.
 */
export function buildResult(t: TaskMessage, res: unknown, err: unknown, failed: boolean): Report {
  const lease = t.lease as Lease;
  if (failed) {
    return failureReport(lease, err);
  }
  const fail = (msg: string) => report(errorResult(lease, msg, true));
  const success = create(SuccessSchema);
  const result = create(TaskResultSchema, { lease, outcome: { case: "success", value: success } });
  if (res === undefined || res === null) {
    return report(result);
  }
  if (typeof res !== "object" || Array.isArray(res)) {
    return fail(`converge: result must be an object ({status, children, ...}) or undefined, got ${Array.isArray(res) ? "an array" : typeof res}`);
  }
  const r = res as Result;
  try {
    success.status = encodeObject(r.status, maxStatusBytes) ?? new Uint8Array();
  } catch (e) {
    return fail(`converge: result status: ${messageOf(e)}`);
  }
  try {
    const output = encodeObject(r.output, maxOutputBytes);
    if (output && !t.operation) {
      return fail(
        `converge: result output: set for a task that runs no operation (trigger ${JSON.stringify(t.trigger)}); only an operation reaction reports an output`,
      );
    }
    success.operationOutput = output ?? new Uint8Array();
  } catch (e) {
    return fail(`converge: result output: ${messageOf(e)}`);
  }
  success.unhealthy = r.unhealthy === true;
  if (r.conditions !== undefined && r.conditions !== null) {
    if (!Array.isArray(r.conditions)) {
      return fail("converge: result conditions: must be an array");
    }
    for (const c of r.conditions) {
      success.conditions.push(
        create(ConditionSchema, {
          type: String(c?.type ?? "").toWellFormed(),
          status: String(c?.status ?? "").toWellFormed(),
          reason: String(c?.reason ?? "").toWellFormed(),
          message: String(c?.message ?? "").toWellFormed(),
        }),
      );
    }
  }
  let chunks: Report["chunks"] = [];
  if (composes(r)) {
    try {
      chunks = attachComposition(lease, success, encodeComposition(r));
    } catch (e) {
      return fail(`converge: result ${messageOf(e)}`);
    }
  }
  if (t.reactor) {
    const problem = checkReactorResult(success);
    if (problem) {
      return fail(`converge: result ${problem}`);
    }
  }
  for (const c of chunks) {
    const problem = validate(ComposeChunkSchema, c);
    if (problem) {
      return fail(`converge: invalid result: composition chunk ${c.index}: ${problem}`);
    }
  }
  const problem = validate(TaskResultSchema, result);
  if (problem) {
    return fail(`converge: invalid result: ${problem}`);
  }
  return { chunks, result, size: sizeOf(TaskResultSchema, result) };
}

function report(result: TaskResult): Report {
  return { chunks: [], result, size: sizeOf(TaskResultSchema, result) };
}

function composes(r: Result): boolean {
  return r.compose === true || (r.children?.length ?? 0) > 0 || (r.edges?.length ?? 0) > 0 || (r.references?.length ?? 0) > 0;
}

/**
 * failureReport reports a handler's error with the reason and retry-after
 * attached to it. Those are checked by the protocol's rules here, before
 * sending: a bad one makes the failure terminal, saying what is wrong and
 * what the handler said, and carries neither.
 */
function failureReport(lease: Lease, err: unknown): Report {
  const msg = messageOf(err);
  const result = errorResult(lease, msg, isTerminal(err));
  const f = result.outcome.value as TaskError;
  f.reason = reasonOf(err).toWellFormed();
  const ms = retryAfterOf(err);
  if (ms !== undefined) {
    f.retryAfter = durationOf(ms);
  }
  const problem = validate(TaskErrorSchema, f);
  if (problem) {
    return report(errorResult(lease, `converge: invalid failure: ${problem}; the handler's error: ${msg}`, true));
  }
  return report(result);
}

/** durationOf converts ms to a Duration; anything but a finite number becomes 0, which the rules refuse. */
function durationOf(ms: unknown): Duration {
  if (typeof ms !== "number" || !Number.isFinite(ms)) {
    return create(DurationSchema, { seconds: 0n, nanos: 0 });
  }
  const seconds = Math.trunc(ms / 1000);
  const nanos = Math.round((ms - seconds * 1000) * 1e6);
  return create(DurationSchema, { seconds: BigInt(seconds), nanos });
}

/**
 * errorResult reports a failed task. The message is made well-formed (the
 * wire format requires UTF-8) and bounded by maxErrorBytes.
 */
export function errorResult(lease: Lease, msg: string, terminal: boolean): TaskResult {
  return create(TaskResultSchema, {
    lease,
    outcome: { case: "error", value: create(TaskErrorSchema, { message: boundUTF8(msg, maxErrorBytes), terminal }) },
  });
}

/**
 * checkReactorResult refuses a reactor's result that carries anything: a
 * reactor emits side effects only, so whatever it carried would be lost.
 */
function checkReactorResult(s: Success): string | undefined {
  const parts: string[] = [];
  if (s.status.length > 0) parts.push("status");
  if (s.unhealthy) parts.push("unhealthy");
  if (s.conditions.length > 0) parts.push("conditions");
  if (s.composition) parts.push("a composition");
  if (s.operationOutput.length > 0) parts.push("an output");
  if (parts.length === 0) {
    return undefined;
  }
  return `of a reactor task carries ${parts.join(", ")}: a reactor emits side effects only; return undefined`;
}
