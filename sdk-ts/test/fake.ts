// A fake WorkerService on a real HTTP/2 (h2c) listener, for unit tests of
// the worker: each stream is a FakeSession the test reads worker messages
// from and writes server messages to.
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { ConnectError, Code, type ConnectRouter } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import * as http2 from "node:http2";
import type { AddressInfo } from "node:net";
import {
  ServerMessageSchema,
  SubscribedSchema,
  WorkerService,
  type ServerMessage,
  type Subscribe,
  type WorkerMessage,
} from "../gen/converge/v1/worker_pb.js";

/** deadline bounds every wait in the tests. */
export const deadlineMs = 5000;

/** Waiter is a list that can be awaited for an element matching a predicate. */
export class Waiter<T> {
  readonly items: T[] = [];
  private waiters: { pred: (t: T) => boolean; from: number; resolve: (t: T) => void }[] = [];
  private closed = false;

  push(t: T): void {
    this.items.push(t);
    const i = this.items.length - 1;
    this.waiters = this.waiters.filter((w) => {
      if (i >= w.from && w.pred(t)) {
        w.resolve(t);
        return false;
      }
      return true;
    });
  }

  close(): void {
    this.closed = true;
  }

  /** next resolves with the first item at index >= from matching pred, failing after the deadline. */
  next(pred: (t: T) => boolean, what: string, from = 0, ms = deadlineMs): Promise<T> {
    const found = this.items.slice(from).find(pred);
    if (found !== undefined) {
      return Promise.resolve(found);
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== entry);
        reject(new Error(`timed out after ${ms} ms waiting for ${what}${this.closed ? " (stream closed)" : ""}`));
      }, ms);
      const entry = {
        pred,
        from,
        resolve: (t: T) => {
          clearTimeout(timer);
          resolve(t);
        },
      };
      this.waiters.push(entry);
    });
  }
}

/** Queue is an async iterable fed by push and ended by end. */
class Queue<T> implements AsyncIterable<T> {
  private items: T[] = [];
  private wake: (() => void) | undefined;
  private ended = false;
  private error: unknown;

  push(t: T): void {
    this.items.push(t);
    this.wake?.();
  }

  end(error?: unknown): void {
    this.ended = true;
    this.error = error;
    this.wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    for (;;) {
      while (this.items.length > 0) {
        yield this.items.shift() as T;
      }
      if (this.ended) {
        if (this.error !== undefined) throw this.error;
        return;
      }
      await new Promise<void>((r) => (this.wake = r));
      this.wake = undefined;
    }
  }
}

/** FakeSession is one worker stream. */
export class FakeSession {
  readonly received = new Waiter<WorkerMessage>();
  readonly out = new Queue<ServerMessage>();
  /** Set when the worker closed its side or the stream broke. */
  done = false;
  readonly ended: Promise<void>;
  private markEnded!: () => void;

  constructor(readonly subscribe: Subscribe) {
    this.ended = new Promise((r) => (this.markEnded = r));
  }

  send(m: MessageInitShape<typeof ServerMessageSchema>["msg"]): void {
    this.out.push(create(ServerMessageSchema, { msg: m } as MessageInitShape<typeof ServerMessageSchema>));
  }

  /** end ends the stream from the server's side, with an error if given. */
  end(error?: unknown): void {
    this.out.end(error);
  }

  /** next waits for a worker message of the given case (after index from). */
  next<C extends NonNullable<WorkerMessage["msg"]["case"]>>(
    c: C,
    pred: (v: Extract<WorkerMessage["msg"], { case: C }>["value"]) => boolean = () => true,
    from = 0,
  ): Promise<Extract<WorkerMessage["msg"], { case: C }>["value"]> {
    return this.received
      .next((m) => m.msg.case === c && pred(m.msg.value as never), `a ${c} message`, from)
      .then((m) => m.msg.value as never);
  }

  /** all returns the values of every received message of case c. */
  all<C extends NonNullable<WorkerMessage["msg"]["case"]>>(c: C): Extract<WorkerMessage["msg"], { case: C }>["value"][] {
    return this.received.items.filter((m) => m.msg.case === c).map((m) => m.msg.value as never);
  }

  /** @internal */
  finish(): void {
    this.done = true;
    this.received.close();
    this.markEnded();
  }
}

export interface FakeOptions {
  /** The Subscribed reply; default a 50 ms heartbeat. */
  subscribed?: (s: Subscribe) => MessageInitShape<typeof SubscribedSchema>;
}

/** FakeServer serves WorkerService on 127.0.0.1 over h2c. */
export class FakeServer {
  readonly sessions = new Waiter<FakeSession>();
  private server: http2.Http2Server | undefined;
  private readonly h2 = new Set<http2.ServerHttp2Session>();
  url = "";
  private port = 0;

  constructor(private readonly opts: FakeOptions = {}) {}

  async start(port = this.port): Promise<this> {
    const routes = (router: ConnectRouter) =>
      router.service(WorkerService, {
        connect: (reqs) => this.serve(reqs),
      });
    this.server = http2.createServer(connectNodeAdapter({ routes }));
    this.server.on("session", (h2: http2.ServerHttp2Session) => {
      this.h2.add(h2);
      h2.once("close", () => this.h2.delete(h2));
    });
    await new Promise<void>((resolve, reject) => {
      this.server?.once("error", reject);
      this.server?.listen(port, "127.0.0.1", () => resolve());
    });
    this.port = (this.server.address() as AddressInfo).port;
    this.url = `http://127.0.0.1:${this.port}`;
    return this;
  }

  private async *serve(reqs: AsyncIterable<WorkerMessage>): AsyncGenerator<ServerMessage> {
    const it = reqs[Symbol.asyncIterator]();
    const first = await it.next();
    if (first.done || first.value.msg.case !== "subscribe") {
      throw new ConnectError("first message must be subscribe", Code.InvalidArgument);
    }
    const sub = first.value.msg.value;
    const s = new FakeSession(sub);
    s.received.push(first.value);
    const reply = this.opts.subscribed?.(sub) ?? { sessionId: `s${this.sessions.items.length + 1}`, heartbeatIntervalMs: 50 };
    s.send({ case: "subscribed", value: create(SubscribedSchema, reply) });
    void (async () => {
      try {
        for (;;) {
          const r = await it.next();
          if (r.done) break;
          s.received.push(r.value);
        }
      } catch {
        // the stream broke
      } finally {
        s.end();
        s.finish();
      }
    })();
    this.sessions.push(s);
    yield* s.out;
  }

  /** session waits for the n-th stream (0-based). */
  session(n: number): Promise<FakeSession> {
    return this.sessions.next((_) => this.sessions.items.indexOf(_) === n, `stream #${n}`);
  }

  /** stop closes the listener and every connection. */
  async stop(): Promise<void> {
    const srv = this.server;
    if (!srv) return;
    this.server = undefined;
    for (const s of this.sessions.items) {
      s.end();
    }
    const closed = new Promise<void>((resolve) => srv.close(() => resolve()));
    // Connections are destroyed too, so the worker sees the server go away.
    for (const h2 of this.h2) {
      h2.destroy();
    }
    await closed;
  }
}
