import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type Client } from "@connectrpc/connect";
import {
  DrainSchema,
  HeartbeatSchema,
  ReleaseSchema,
  ResultsSchema,
  WorkerMessageSchema,
  type ServerMessage,
  type Subscribe,
  type Subscribed,
  type TaskResult,
  type WorkerMessage,
  type WorkerService,
} from "../gen/converge/v1/worker_pb.js";
import type { Report } from "./chunk.js";
import { messageOf } from "./errors.js";
import type { Ledger } from "./ledger.js";
import type { Logger } from "./options.js";
import { newStreamReadiness, type Readiness } from "./readiness.js";
import { Wake } from "./wake.js";

// Heartbeat interval when the server sets none, and the floor that keeps a
// bogus tiny interval from flooding the stream.
const defaultHeartbeatMs = 5000;
const minHeartbeatMs = 10;
// sendBatch messages (results and composition chunks) are sent at most per
// wake-up of the sender, so heartbeats interleave with a large backlog.
export const sendBatch = 256;
// maxResultBytes bounds the results in one message, well under the
// server's message limit.
const maxResultBytes = 1 << 20;

/** What a session needs from its worker. */
export interface SessionHost {
  client: Client<typeof WorkerService>;
  ledger: Ledger;
  readiness: Readiness;
  log: Logger;
  subscribedTimeoutMs: number;
  subscribe(): Subscribe;
  /** onMessage handles every server message after Subscribed; completeConfigs is true for the stream's first Configs. */
  onMessage(m: ServerMessage, completeConfigs: boolean): void;
}

/** How a session ended. */
export interface SessionEnd {
  /** The stream got as far as being subscribed. */
  subscribed: boolean;
  error: unknown;
}

/**
 * runSession holds one stream from dial to break: it subscribes, then
 * receives server messages while a generator feeds the stream results,
 * heartbeats, readiness and Drain. When closeSend aborts, the generator
 * ends (closing the send side) and the session ends when the server ends
 * the stream; when stop aborts, the stream is cancelled.
 */
export async function runSession(h: SessionHost, stop: AbortSignal, closeSend: AbortSignal): Promise<SessionEnd> {
  const ac = new AbortController();
  const cancel = () => ac.abort();
  stop.addEventListener("abort", cancel, { once: true });
  const wake = new Wake();
  let subscribed: (s: Subscribed | undefined) => void = () => {};
  const reply = new Promise<Subscribed | undefined>((resolve) => (subscribed = resolve));
  // The sender's heartbeat timer, cleared here too: a transport that stops
  // pulling the sender leaves it suspended, and its own cleanup unrun.
  const timers: { tick?: ReturnType<typeof setInterval> } = {};
  const outgoing = sendLoop(h, wake, reply, ac.signal, closeSend, timers);
  const timer = setTimeout(
    () => ac.abort(new ConnectError(`no subscribed reply within ${h.subscribedTimeoutMs} ms`, Code.DeadlineExceeded)),
    h.subscribedTimeoutMs,
  );
  const end: SessionEnd = { subscribed: false, error: undefined };
  let live = false;
  try {
    const it = h.client.connect(outgoing, { signal: ac.signal })[Symbol.asyncIterator]();
    const first = await it.next();
    clearTimeout(timer);
    if (first.done) {
      throw new Error("server closed the stream before replying to subscribe");
    }
    if (first.value.msg.case !== "subscribed") {
      throw new Error(`protocol error: first server message is ${first.value.msg.case ?? "empty"}, want subscribed`);
    }
    const s = first.value.msg.value;
    h.log.info("converge: worker subscribed", {
      session: s.sessionId,
      member: s.memberId,
      adopted: s.adopted.length,
      lost: s.lost.length,
    });
    for (const w of s.warnings) {
      h.log.warn(`converge: server warning: ${w}`, { session: s.sessionId });
    }
    h.ledger.beginSession(s.lost, () => wake.poke());
    h.readiness.kick = () => wake.poke();
    live = true;
    end.subscribed = true;
    subscribed(s);
    let completeConfigs = true;
    for (;;) {
      const r = await it.next();
      if (r.done) {
        end.error = new Error("server closed the stream");
        break;
      }
      h.onMessage(r.value, completeConfigs);
      if (r.value.msg.case === "configs") {
        completeConfigs = false;
      }
    }
  } catch (e) {
    end.error = ac.signal.reason instanceof ConnectError ? ac.signal.reason : e;
  } finally {
    clearTimeout(timer);
    clearInterval(timers.tick);
    stop.removeEventListener("abort", cancel);
    if (live) {
      h.ledger.endSession();
      h.readiness.kick = undefined;
    }
    subscribed(undefined);
    ac.abort();
    wake.poke();
  }
  return end;
}

/**
 * sendLoop is the stream's only sender, pulled by the transport as it
 * writes. It sends Subscribe, then, once subscribed, the reactions that are
 * not ready and a heartbeat at once, then a heartbeat every interval,
 * readiness changes, Drain once the worker drains, results as they
 * complete, and the leases the worker gives back. It ends when the session
 * ends or closeSend aborts.
 */
async function* sendLoop(
  h: SessionHost,
  wake: Wake,
  reply: Promise<Subscribed | undefined>,
  stop: AbortSignal,
  closeSend: AbortSignal,
  timers: { tick?: ReturnType<typeof setInterval> },
): AsyncGenerator<WorkerMessage> {
  yield msg({ case: "subscribe", value: h.subscribe() });
  const s = await reply;
  if (!s || stop.aborted) {
    return;
  }
  let heartbeatDue = false;
  const tick = setInterval(() => {
    heartbeatDue = true;
    wake.poke();
  }, heartbeatInterval(s));
  timers.tick = tick;
  const poke = () => wake.poke();
  closeSend.addEventListener("abort", poke);
  stop.addEventListener("abort", poke);
  const heartbeat = () => msg({ case: "heartbeat", value: create(HeartbeatSchema, { inFlight: h.ledger.attested() }) });
  // The server's view of readiness is per stream: a new stream starts with
  // every reaction ready, so what is not is reported again.
  const told = newStreamReadiness();
  try {
    let r = h.readiness.changes(told);
    if (r) {
      yield msg({ case: "readiness", value: r });
    }
    yield heartbeat();
    let drainSent = false;
    for (;;) {
      if (stop.aborted) {
        return;
      }
      r = h.readiness.changes(told);
      if (r) {
        yield msg({ case: "readiness", value: r });
      }
      if (!drainSent && h.ledger.draining) {
        drainSent = true;
        yield msg({ case: "drain", value: create(DrainSchema) });
      }
      const leases = h.ledger.takeReleases();
      if (leases.length > 0) {
        yield msg({ case: "release", value: create(ReleaseSchema, { leases }) });
      }
      const { reps, more } = h.ledger.takeUnsent(sendBatch);
      // An event whose send fails is not sent again: events are best
      // effort, and a new stream may find the task's lease gone.
      for (const e of h.ledger.takeEvents()) {
        yield msg({ case: "taskEvent", value: e });
      }
      yield* reportMessages(reps);
      if (more) {
        wake.poke();
      }
      if (stop.aborted || closeSend.aborted) {
        return;
      }
      if (heartbeatDue) {
        heartbeatDue = false;
        yield heartbeat();
        continue;
      }
      await wake.wait();
    }
  } finally {
    clearInterval(tick);
    closeSend.removeEventListener("abort", poke);
    stop.removeEventListener("abort", poke);
  }
}

/**
 * reportMessages yields finished tasks' reports: each composition's chunks,
 * in order, then the results in batches. A result follows its own chunks on
 * the stream; other tasks' messages may come in between.
 */
function* reportMessages(reps: Report[]): Generator<WorkerMessage> {
  let batch: TaskResult[] = [];
  let bytes = 0;
  for (const rep of reps) {
    for (const c of rep.chunks) {
      yield msg({ case: "composeChunk", value: c });
    }
    if (batch.length > 0 && bytes + rep.size > maxResultBytes) {
      yield msg({ case: "results", value: create(ResultsSchema, { results: batch }) });
      batch = [];
      bytes = 0;
    }
    batch.push(rep.result);
    bytes += rep.size;
  }
  if (batch.length > 0) {
    yield msg({ case: "results", value: create(ResultsSchema, { results: batch }) });
  }
}

function msg(m: WorkerMessage["msg"]): WorkerMessage {
  return create(WorkerMessageSchema, { msg: m });
}

/** heartbeatInterval is the server's interval, or a third of its lease, or a default; never below the floor. */
export function heartbeatInterval(s: Subscribed): number {
  let d = s.heartbeatIntervalMs;
  if (d <= 0) {
    d = s.leaseSeconds > 0 ? (s.leaseSeconds * 1000) / 3 : defaultHeartbeatMs;
  }
  return Math.max(d, minHeartbeatMs);
}

/** describeError renders a stream error for logs. */
export function describeError(e: unknown): string {
  return e instanceof ConnectError ? `${Code[e.code] ?? e.code}: ${e.rawMessage}` : messageOf(e);
}
