// An in-process WorkerService on a real HTTP/2 (h2c) listener, to test a
// whole worker without a Converge server or a database: it sees the
// subscription, dispatches tasks, collects and acknowledges results, and
// sees the drain. Each stream is a FakeSession.
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError, type ConnectRouter } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import * as http2 from "node:http2";
import type { AddressInfo } from "node:net";
import {
  ConfigsSchema,
  ResultAckSchema,
  ServerMessageSchema,
  SubscribedSchema,
  WorkerService,
  type Lease,
  type ServerMessage,
  type Subscribe,
  type Task as TaskMessage,
  type WorkerMessage,
} from "../../gen/converge/v1/worker_pb.js";
import type { JsonObject, Task } from "../task.js";
import { outcomeOf, type Outcome } from "./outcome.js";
import { testLease, wireTask } from "./task.js";
import { Queue, Waiter, defaultTimeoutMs } from "./waiter.js";

/** A server message, as the `msg` of a ServerMessage. */
export type ServerMsg = MessageInitShape<typeof ServerMessageSchema>["msg"];
type Case = NonNullable<WorkerMessage["msg"]["case"]>;
type ValueOf<C extends Case> = Extract<WorkerMessage["msg"], { case: C }>["value"];

/** A default provider config for {@link FakeServerOptions.configs} and {@link FakeSession.sendConfigs}. */
export interface FakeConfig {
  kind: string;
  kindVersion: number;
  /** Undefined: the kind version has none. */
  config?: JsonObject;
}

/** Options of a {@link FakeServer}. */
export interface FakeServerOptions {
  /** The Subscribed reply to a subscription; default a 50 ms heartbeat interval. */
  subscribed?: (s: Subscribe) => MessageInitShape<typeof SubscribedSchema>;
  /** Acknowledge every result as applied when it arrives, as a server does; default true. */
  autoAck?: boolean;
  /** Default provider configs sent right after Subscribed on every stream, as a server does; default none sent. */
  configs?: FakeConfig[];
  /** Bounds every wait (for a stream, a message, a result); default 5000 ms. */
  timeoutMs?: number;
}

/** FakeSession is one worker stream. */
export class FakeSession {
  /** Every message the worker sent on the stream, its Subscribe first. */
  readonly received: Waiter<WorkerMessage>;
  /** The reactions subscribed to, as "kind/version/reaction". */
  readonly reactions: string[];
  /** Set when the worker closed its side or the stream broke. */
  done = false;
  /** The stream's request headers (Authorization, say); set by the FakeServer. */
  requestHeader: Headers = new Headers();
  /** Resolves when the stream has ended. */
  readonly ended: Promise<void>;
  private readonly out = new Queue<ServerMessage>();
  private readonly leases = new Map<bigint, Lease>();
  private markEnded!: () => void;

  /** Made by the FakeServer for each stream. */
  constructor(
    /** The worker's subscription. */
    readonly subscribe: Subscribe,
    private readonly server: { nextTaskId(): bigint; timeoutMs: number },
  ) {
    this.received = new Waiter(server.timeoutMs);
    this.reactions = subscribe.reactions.map((r) => `${r.kind}/${r.kindVersion}/${r.reaction}`);
    this.ended = new Promise((r) => (this.markEnded = r));
  }

  /** send sends a server message, e.g. `send({ case: "cancel", value: { lease, reason } })`. */
  send(m: ServerMsg): void {
    this.out.push(create(ServerMessageSchema, { msg: m } as MessageInitShape<typeof ServerMessageSchema>));
  }

  /**
   * dispatch sends tasks in one message: tasks made by taskFor (each gets a
   * new task id) or wire Task messages (sent as they are). It returns their
   * leases; the task id identifies the task in {@link result}.
   */
  dispatch(...tasks: (Task | TaskMessage)[]): Lease[] {
    const wire = tasks.map((t) =>
      isMessage(t) ? t : wireTask(t, testLease(t, this.server.nextTaskId()), "converge: FakeSession.dispatch: task"),
    );
    for (const t of wire) {
      if (t.lease) this.leases.set(t.lease.taskId, t.lease);
    }
    this.send({ case: "tasks", value: { tasks: wire } });
    return wire.map((t) => t.lease as Lease);
  }

  /**
   * result waits for the result of the task with the given id (or lease)
   * and reads it, with the composition chunks sent before it, as the server
   * would.
   */
  async result(task: bigint | number | Lease): Promise<Outcome> {
    const id = typeof task === "object" ? task.taskId : BigInt(task);
    const batch = await this.received.next(
      (m) => m.msg.case === "results" && m.msg.value.results.some((r) => r.lease?.taskId === id),
      `the result of task ${id}`,
    );
    const at = this.received.items.indexOf(batch);
    const r = (batch.msg.value as ValueOf<"results">).results.find((x) => x.lease?.taskId === id);
    const chunks = this.received.items
      .slice(0, at)
      .flatMap((m) => (m.msg.case === "composeChunk" && m.msg.value.lease?.taskId === id ? [m.msg.value] : []));
    return outcomeOf(r as NonNullable<typeof r>, chunks);
  }

  /** run dispatches one task and waits for its outcome. */
  async run(task: Task | TaskMessage): Promise<Outcome> {
    const [lease] = this.dispatch(task);
    return this.result(lease);
  }

  /** ack acknowledges the result of the task with the given id: applied unless told otherwise. */
  ack(task: bigint | number, opts: { applied?: boolean; reason?: string } = {}): void {
    const id = BigInt(task);
    const lease = this.resultLease(id) ?? this.leases.get(id) ?? testLease({ generation: 1 }, id);
    const ack = create(ResultAckSchema, { lease, applied: opts.applied ?? true, reason: opts.reason ?? "" });
    this.send({ case: "acks", value: { acks: [ack] } });
  }

  /** cancel tells the worker to stop the task with the given id and drop its result. */
  cancel(task: bigint | number, reason = "cancelled by the test"): void {
    const id = BigInt(task);
    const lease = this.leases.get(id) ?? testLease({ generation: 1 }, id);
    this.send({ case: "cancel", value: { lease, reason } });
  }

  /** sendConfigs sends default provider configs; the stream's first Configs is the complete set. */
  sendConfigs(configs: FakeConfig[]): void {
    this.send({ case: "configs", value: configsMessage(configs) });
  }

  /** next waits for a worker message of case c matching pred, at index from or later. */
  async next<C extends Case>(c: C, pred: (v: ValueOf<C>) => boolean = () => true, from = 0): Promise<ValueOf<C>> {
    const m = await this.received.next((m) => m.msg.case === c && pred(m.msg.value as ValueOf<C>), `a ${c} message`, from);
    return m.msg.value as ValueOf<C>;
  }

  /** all returns the values of every message of case c received so far. */
  all<C extends Case>(c: C): ValueOf<C>[] {
    return this.received.items.filter((m) => m.msg.case === c).map((m) => m.msg.value as ValueOf<C>);
  }

  /** drained waits for the worker's Drain: it is shutting down and takes no more tasks. */
  async drained(): Promise<void> {
    await this.next("drain");
  }

  /** end ends the stream from the server's side, with an error if given. */
  end(error?: unknown): void {
    this.out.end(error);
  }

  /** @internal */
  outgoing(): AsyncIterable<ServerMessage> {
    return this.out;
  }

  /** @internal */
  finish(): void {
    this.done = true;
    this.received.close();
    this.markEnded();
  }

  private resultLease(id: bigint): Lease | undefined {
    for (const b of this.all("results")) {
      const r = b.results.find((x) => x.lease?.taskId === id);
      if (r?.lease) return r.lease;
    }
    return undefined;
  }
}

/**
 * FakeServer serves WorkerService on 127.0.0.1 over h2c:
 *
 * ```ts
 * const fake = await FakeServer.start();
 * const w = new Worker({ url: fake.url });
 * w.handle("hello", 1, "reconcile", reconcileHello);
 * const stop = new AbortController();
 * const running = w.run(stop.signal);
 * const s = await fake.session();
 * assert.deepEqual(s.reactions, ["hello/1/reconcile"]);
 * const out = await s.run(taskFor(manifest, "reconcile", { name: "Ada" }));
 * stop.abort();
 * await s.drained();
 * await running;
 * await fake.stop();
 * ```
 */
export class FakeServer {
  /** Every stream, in the order the worker opened them. */
  readonly sessions: Waiter<FakeSession>;
  /** The URL to give the worker; set by start. */
  url = "";
  /** The port listened on; set by start, kept by a restart. */
  port = 0;
  private server: http2.Http2Server | undefined;
  private readonly h2 = new Set<http2.ServerHttp2Session>();
  private taskIds = 0n;
  private readonly timeoutMs: number;

  constructor(private readonly options: FakeServerOptions = {}) {
    this.timeoutMs = options.timeoutMs ?? defaultTimeoutMs;
    this.sessions = new Waiter(this.timeoutMs);
  }

  /** start makes a FakeServer and starts it on a free port. */
  static start(options: FakeServerOptions = {}): Promise<FakeServer> {
    return new FakeServer(options).start();
  }

  /** start listens on port; by default the one of the last start (a restart), else a free one. */
  async start(port = this.port): Promise<this> {
    const routes = (router: ConnectRouter) => router.service(WorkerService, { connect: (reqs, ctx) => this.serve(reqs, ctx.requestHeader) });
    const srv = http2.createServer(connectNodeAdapter({ routes }));
    srv.on("session", (h2: http2.ServerHttp2Session) => {
      this.h2.add(h2);
      h2.once("close", () => this.h2.delete(h2));
    });
    await new Promise<void>((resolve, reject) => {
      srv.once("error", reject);
      srv.listen(port, "127.0.0.1", () => resolve());
    });
    this.server = srv;
    this.port = (srv.address() as AddressInfo).port;
    this.url = `http://127.0.0.1:${this.port}`;
    return this;
  }

  /** session waits for the n-th stream, from 0. */
  session(n = 0): Promise<FakeSession> {
    return this.sessions.next((s) => this.sessions.items.indexOf(s) === n, `worker stream #${n}`);
  }

  /** stop ends every stream, closes the listener and destroys every connection, so the worker sees the server go away. */
  async stop(): Promise<void> {
    const srv = this.server;
    if (!srv) return;
    this.server = undefined;
    for (const s of this.sessions.items) {
      s.end();
    }
    const closed = new Promise<void>((resolve) => srv.close(() => resolve()));
    for (const h2 of this.h2) {
      h2.destroy();
    }
    await closed;
  }

  private async *serve(reqs: AsyncIterable<WorkerMessage>, header: Headers): AsyncGenerator<ServerMessage> {
    const it = reqs[Symbol.asyncIterator]();
    const first = await it.next();
    if (first.done || first.value.msg.case !== "subscribe") {
      throw new ConnectError("first message must be subscribe", Code.InvalidArgument);
    }
    const sub = first.value.msg.value;
    const s = new FakeSession(sub, { nextTaskId: () => ++this.taskIds, timeoutMs: this.timeoutMs });
    s.requestHeader = new Headers(header);
    s.received.push(first.value);
    const reply = this.options.subscribed?.(sub) ?? { sessionId: `s${this.sessions.items.length + 1}`, heartbeatIntervalMs: 50 };
    s.send({ case: "subscribed", value: create(SubscribedSchema, reply) });
    if (this.options.configs) {
      s.sendConfigs(this.options.configs);
    }
    const autoAck = this.options.autoAck ?? true;
    void (async () => {
      try {
        for (;;) {
          const r = await it.next();
          if (r.done) break;
          s.received.push(r.value);
          if (autoAck && r.value.msg.case === "results") {
            const acks = r.value.msg.value.results.map((x) => create(ResultAckSchema, { lease: x.lease, applied: true }));
            s.send({ case: "acks", value: { acks } });
          }
        }
      } catch {
        // The stream broke.
      } finally {
        s.end();
        s.finish();
      }
    })();
    this.sessions.push(s);
    yield* s.outgoing();
  }
}

function isMessage(t: Task | TaskMessage): t is TaskMessage {
  return (t as { $typeName?: string }).$typeName === "converge.v1.Task";
}

function configsMessage(configs: FakeConfig[]) {
  const enc = new TextEncoder();
  return create(ConfigsSchema, {
    configs: configs.map((c) => ({
      kind: c.kind,
      kindVersion: c.kindVersion,
      config: c.config === undefined ? new Uint8Array() : enc.encode(JSON.stringify(c.config)),
    })),
  });
}
