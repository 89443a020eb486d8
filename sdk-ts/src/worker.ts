import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { tlsNodeOptions, withNodeOptions } from "./tls.js";
import {
  ReactionRefSchema,
  SubscribeSchema,
  WorkerService,
  type ReactionRef,
  type ServerMessage,
  type Subscribe,
  type Task as TaskMessage,
} from "../gen/converge/v1/worker_pb.js";
import { Backoff } from "./backoff.js";
import { ConfigStore } from "./config.js";
import { terminal } from "./errors.js";
import { hasConfig } from "./json.js";
import type { Report } from "./chunk.js";
import { Ledger, keyOf, notAccepted, type Execution } from "./ledger.js";
import { checkKind, checkKindVersion, checkReactionName } from "./names.js";
import { settings, type Settings, type WorkerOptions } from "./options.js";
import { Readiness, noConfigReason, reactionKey } from "./readiness.js";
import { validate } from "./result.js";
import { chain, checkMiddleware, runTask, type Middleware } from "./run.js";
import { describeError, runSession, type SessionHost } from "./session.js";
import { newTask, type Handler, type HandlerResult, type JsonObject, type Task } from "./task.js";
import { sdkName } from "./version.js";
import { sleep, within } from "./wake.js";

/** Options of one reaction registered with {@link Worker.handle}. */
export interface HandlerOptions<Spec = JsonObject, Status = JsonObject, Config = JsonObject> {
  /**
   * Makes the reaction wait for its kind version's default provider config:
   * until the server has sent one, the worker reports the reaction not
   * ready (reason {@link noConfigReason}) and the server parks its
   * resources. A task that still arrives without a config is reported as a
   * transient failure, so the handler is never called without one.
   */
  needsConfig?: boolean;
  /**
   * Wraps this reaction's handler, inside the worker's
   * {@link WorkerOptions.middleware}; the first is outermost.
   */
  middleware?: Middleware<Spec, Status, Config>[];
}

/** Bounded waits at the end of a drain and of a subscription, in ms; tests shorten them. */
export interface Waits {
  /** For handlers to return once the drain timeout aborted their signals. */
  drainGrace: number;
  /** For the server to acknowledge the last results. */
  drainAcks: number;
  /** For the server to end the stream after the worker closed its side. */
  closeStream: number;
  /** For the server's reply to Subscribe. */
  subscribed: number;
}

const defaultWaits: Waits = { drainGrace: 5000, drainAcks: 5000, closeStream: 2000, subscribed: 30000 };

interface Registration {
  kind: string;
  version: number;
  reaction: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  handler: Handler<any, any, any>;
  needsConfig: boolean;
}

/**
 * Worker serves reactions to a Converge server. Create one, register a
 * handler per reaction with {@link Worker.handle}, then call
 * {@link Worker.run}:
 *
 * ```ts
 * const w = new Worker({ capacity: 16 }); // dials CONVERGE_SERVER, else http://localhost:7070
 * w.handle("greeting", 1, "reconcile", async (task) => ({ status: { message: `hello ${task.spec.name}` } }));
 * await w.run(shutdownSignal()); // resolves after a graceful drain
 * ```
 *
 * The worker takes care of the protocol: it subscribes with the registered
 * reactions, never runs more than `capacity` handlers at once, attests
 * running tasks with heartbeats, keeps results until the server
 * acknowledges them, aborts handlers the server cancels, reconnects with
 * exponential backoff (handlers keep running across reconnects and their
 * results are delivered on the new stream), and drains gracefully.
 *
 * Handlers must be idempotent: a task can be delivered more than once.
 * {@link Task.dedupToken} is stable across redeliveries of the same work.
 * A Worker runs once.
 */
export class Worker {
  private readonly s: Settings;
  /** @internal */
  waits: Waits = { ...defaultWaits };
  private readonly ledger: Ledger;
  private readonly configs = new ConfigStore();
  private readonly readiness = new Readiness();
  private readonly handlers = new Map<string, Registration>();
  private started = false;
  private reactions: ReactionRef[] = [];
  private client: Client<typeof WorkerService> | undefined;

  /** Throws a TypeError or RangeError naming the option for invalid options. */
  constructor(options: WorkerOptions = {}) {
    this.s = settings(options);
    this.ledger = new Ledger(this.s.capacity);
  }

  /**
   * handle registers handler to run the reaction named reaction of version
   * version of kind. The worker subscribes to exactly the registered
   * reactions. It throws for an invalid name or version, a reaction
   * registered twice, a call after run, and middleware that is not a
   * function or returns no handler. The worker's middleware and then
   * options.middleware wrap handler (see {@link Middleware}); a task a
   * needsConfig reaction gets without a config fails before any of them.
   *
   * Spec, Status and Config type the task and the result. They come from
   * the type arguments (`handle<Spec, Status>(...)`) or the handler's own
   * type (a generated `HelloV1Handler`, a `Task<Spec, Status>` parameter),
   * never from what the handler returns: a returned status that does not
   * match the declared Status is a compile error, and an untyped handler's
   * Status is {@link JsonObject}.
   */
  handle<Spec = JsonObject, Status = JsonObject, Config = JsonObject>(
    kind: string,
    version: number,
    reaction: string,
    handler: (task: Task<Spec, Status, Config>) => HandlerResult<NoInfer<Status>>,
    options: HandlerOptions<NoInfer<Spec>, NoInfer<Status>, NoInfer<Config>> = {},
  ): this {
    const call = `handle(${JSON.stringify(kind)}, ${version}, ${JSON.stringify(reaction)})`;
    const where = `converge: ${call}`;
    const problem = checkKind(kind) ?? checkKindVersion(version) ?? checkReactionName(reaction);
    if (problem) {
      throw new TypeError(`${where}: ${problem}`);
    }
    if (typeof handler !== "function") {
      throw new TypeError(`${where}: handler must be a function`);
    }
    if (this.started) {
      throw new Error(`${where}: called after run`);
    }
    const key = reactionKey(kind, version, reaction);
    if (this.handlers.has(key)) {
      throw new Error(`${where}: reaction already registered`);
    }
    const needsConfig = options?.needsConfig === true;
    const own = `${call}: options.middleware`;
    const inner = chain(checkMiddleware(options?.middleware, own), handler, own);
    const wrapped = chain(this.s.middleware, inner, "new Worker: options.middleware");
    this.handlers.set(key, { kind, version, reaction, handler: wrapped, needsConfig });
    this.configs.serve(kind, version);
    this.readiness.add(kind, version, reaction, needsConfig);
    return this;
  }

  /**
   * defaultConfig returns the latest default provider config the server
   * sent for version version of kind, or undefined when there is none (none
   * set, not received yet, or not a kind version the worker serves). The
   * caller owns the returned object.
   */
  defaultConfig<Config = JsonObject>(kind: string, version: number): Config | undefined {
    return this.configs.get(kind, version) as Config | undefined;
  }

  /**
   * setReady tells the server whether the worker can serve a reaction right
   * now, e.g. while a dependency is down. A reaction that is not ready gets
   * no tasks: its resources wait, parked, and the reason (at most 1024
   * characters) is shown to operators. Reactions are ready until setReady
   * says otherwise; with needsConfig, a reaction is ready only when both
   * allow it. The worker reports every change, and the current state again
   * on every new stream. It throws for a reaction that has no handler.
   */
  setReady(kind: string, version: number, reaction: string, ready: boolean, reason = ""): void {
    const problem = this.readiness.set(kind, version, reaction, ready, reason);
    if (problem) {
      throw new Error(`converge: setReady(${JSON.stringify(kind)}, ${version}, ${JSON.stringify(reaction)}): ${problem}`);
    }
  }

  /**
   * run connects to the server and serves tasks until signal aborts, then
   * drains and resolves. Without a signal it runs forever.
   *
   * Connection failures never end run: the worker logs them and reconnects
   * with backoff; running handlers keep running and their results are
   * delivered on the next stream. run rejects for a configuration it cannot
   * run: no handler registered, or a second call; and with the server's
   * ConnectError when the server refuses the subscription itself (a
   * registered reaction the applied kind version does not declare, say a
   * typo), which retrying cannot fix: handlers still running are then
   * aborted and their results dropped. A kind version not applied yet is
   * only logged as the server's warning: its tasks flow once it is.
   *
   * Draining, once signal aborts: the worker tells the server to stop
   * sending tasks, gives back the tasks it received but had not started,
   * waits for running handlers (up to drainTimeoutMs), reports their
   * results, waits up to a few seconds for the server to acknowledge them,
   * and closes the stream. When drainTimeoutMs passes first, the tasks
   * still running are given back to the server, which hands them to
   * another worker at once (not after their lease) without counting a
   * failed attempt; their signals are aborted, they get a short grace to
   * return, and their results are dropped.
   */
  async run(signal?: AbortSignal): Promise<void> {
    this.prepare();
    if (signal?.aborted) {
      return;
    }
    const stopNotifier = new AbortController();
    const notifier = this.s.onConfig ? this.notifyConfigs(stopNotifier.signal) : Promise.resolve();
    const streams = new AbortController();
    const closeSend = new AbortController();
    const loop = this.connectLoop(streams.signal, closeSend.signal);
    const refused = await new Promise<unknown>((resolve) => {
      void loop.then((err) => err !== undefined && resolve(err));
      if (!signal) {
        return; // run until refused
      }
      signal.addEventListener("abort", () => resolve(undefined), { once: true });
      if (signal.aborted) resolve(undefined);
    });
    if (refused !== undefined) {
      this.ledger.startDrain();
      this.ledger.abandonRunning("converge: the server refused the subscription");
      stopNotifier.abort();
      this.configs.kick.poke();
      throw refused;
    }
    await this.drain();
    closeSend.abort();
    await within(loop, this.waits.closeStream);
    streams.abort();
    await loop;
    stopNotifier.abort();
    this.configs.kick.poke();
    if (!(await within(notifier, this.waits.drainGrace))) {
      this.s.logger.warn("converge: onConfig has not returned; leaving it running");
    }
  }

  /** prepare checks the configuration and fixes what every stream subscribes with. */
  private prepare(): void {
    if (this.started) {
      throw new Error("converge: run called more than once");
    }
    this.started = true;
    if (this.handlers.size === 0) {
      throw new Error("converge: no handler registered: call handle before run");
    }
    this.reactions = [...this.handlers.values()]
      .map((r) => create(ReactionRefSchema, { kind: r.kind, kindVersion: r.version, reaction: r.reaction }))
      .sort((a, b) => cmp(a.kind, b.kind) || a.kindVersion - b.kindVersion || cmp(a.reaction, b.reaction));
    const problem = validate(SubscribeSchema, this.subscribe([]));
    if (problem) {
      throw new Error(`converge: invalid subscription (check the options and reactions): ${problem}`);
    }
    const token = this.s.token;
    const transport =
      this.s.transport ??
      createConnectTransport({
        baseUrl: this.s.url,
        httpVersion: "2",
        // A silently dead network ends the stream and the worker reconnects
        // instead of waiting forever.
        pingIntervalMs: 15_000,
        pingTimeoutMs: 10_000,
        pingIdleConnection: true,
        ...withNodeOptions(tlsNodeOptions(this.s.tls)),
        interceptors: token ? [(next) => (req) => (req.header.set("Authorization", `Bearer ${token}`), next(req))] : [],
      });
    this.client = createClient(WorkerService, transport);
  }

  private subscribe(resumed: Subscribe["resumed"]): Subscribe {
    return create(SubscribeSchema, {
      workerName: this.s.name,
      reactions: this.reactions,
      capacity: this.s.capacity,
      resumed,
      sdk: sdkName,
    });
  }

  /**
   * connectLoop holds a stream to the server, reconnecting with backoff,
   * until stop or closeSend aborts, or the server refuses the subscription,
   * which it returns.
   */
  private async connectLoop(stop: AbortSignal, closeSend: AbortSignal): Promise<unknown> {
    const b = new Backoff(this.s.reconnectMinMs, this.s.reconnectMaxMs);
    const host: SessionHost = {
      client: this.client as Client<typeof WorkerService>,
      ledger: this.ledger,
      readiness: this.readiness,
      log: this.s.logger,
      subscribedTimeoutMs: this.waits.subscribed,
      subscribe: () => this.subscribe(this.ledger.resumable()),
      onMessage: (m, complete) => this.onMessage(m, complete),
    };
    const either = AbortSignal.any([stop, closeSend]);
    for (;;) {
      const end = await runSession(host, stop, closeSend);
      if (either.aborted) {
        return undefined;
      }
      if (!end.subscribed && refusesSubscription(end.error)) {
        this.s.logger.error("converge: the server refused the subscription", { error: describeError(end.error) });
        return end.error;
      }
      if (end.subscribed) {
        b.reset();
      }
      const delay = b.next();
      const msg = end.subscribed
        ? "converge: worker stream ended; reconnecting"
        : "converge: worker could not connect; retrying";
      this.s.logger.warn(msg, { error: describeError(end.error), delayMs: delay });
      await sleep(delay, either);
      if (either.aborted) {
        return undefined;
      }
    }
  }

  private onMessage(m: ServerMessage, completeConfigs: boolean): void {
    switch (m.msg.case) {
      case "tasks":
        for (const t of m.msg.value.tasks) {
          this.onTask(t);
        }
        return;
      case "cancel": {
        const c = m.msg.value;
        if (this.ledger.abandon(keyOf(c.lease), c.reason)) {
          this.s.logger.debug("converge: task cancelled by server", { taskId: c.lease?.taskId, reason: c.reason });
        }
        return;
      }
      case "acks":
        for (const a of m.msg.value.acks) {
          if (!a.applied) {
            this.s.logger.info("converge: server discarded a result", {
              taskId: a.lease?.taskId,
              epoch: a.lease?.epoch,
              reason: a.reason,
            });
          }
          this.launch(this.ledger.ack(keyOf(a.lease)));
        }
        return;
      case "configs": {
        const { changes, ignored } = this.configs.apply(m.msg.value, completeConfigs);
        for (const why of ignored) {
          this.s.logger.warn(`converge: ignoring a provider config from the server: ${why}`);
        }
        for (const c of changes) {
          this.readiness.setConfig(c.kind, c.version, c.present);
        }
        return;
      }
      case "subscribed":
        this.s.logger.warn("converge: ignoring a repeated subscribed message");
        return;
      default:
        this.s.logger.debug("converge: ignoring an unknown server message");
    }
  }

  private onTask(t: TaskMessage): void {
    const l = t.lease;
    if (!l || l.taskId <= 0n || l.epoch <= 0n || l.generation < 0n) {
      this.s.logger.warn("converge: ignoring a task without a valid lease", { kind: t.kind });
      return;
    }
    const starts = this.ledger.accept(t, this.handlerFor(t));
    if (typeof starts === "string") {
      const log = starts === notAccepted.queueFull ? this.s.logger.warn : this.s.logger.debug;
      log.call(this.s.logger, `converge: task not accepted: ${starts}`, {
        kind: t.kind,
        name: t.resource?.name,
        taskId: l.taskId,
      });
      return;
    }
    this.launch(starts);
  }

  /**
   * handlerFor returns the handler for a task; for an unregistered reaction,
   * one that fails terminally saying so.
   */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  private handlerFor(t: TaskMessage): Handler<any, any, any> {
    const reg = this.handlers.get(reactionKey(t.kind, t.kindVersion, t.reaction));
    const what = `kind ${JSON.stringify(t.kind)} version ${t.kindVersion} reaction ${JSON.stringify(t.reaction)}`;
    if (!reg) {
      return () => {
        throw terminal(new Error(`converge: worker ${JSON.stringify(this.s.name)} has no handler for ${what}`));
      };
    }
    if (reg.needsConfig && !hasConfig(t.config)) {
      // The task raced the readiness report, or the server does not honour
      // it: the handler was promised a config, so the server is asked to
      // retry later instead.
      return () => {
        throw new Error(`converge: ${what} needs a provider config (needsConfig) and the task carries none: ${noConfigReason}`);
      };
    }
    return reg.handler;
  }

  /** launch starts handlers the ledger allowed to run. */
  private launch(exs: Execution[]): void {
    for (const ex of exs) {
      void this.execute(ex);
    }
  }

  /** execute runs one handler and records its result; the worker goes on whatever it does. */
  private async execute(ex: Execution): Promise<void> {
    const rep = await runTask(ex.task, ex.handler, () => newTask(ex.task, ex.controller.signal, (e) => this.ledger.queueEvent(ex, e)));
    if (!ex.abandoned) {
      this.logFailure(ex.task, rep);
    }
    this.launch(this.ledger.finish(ex, rep));
  }

  /** logFailure logs a failed task once, with what identifies the attempt; the server logs it too. */
  private logFailure(t: Execution["task"], rep: Report): void {
    const o = rep.result.outcome;
    if (o.case !== "error") return;
    const fields = {
      kind: t.kind,
      version: t.kindVersion,
      reaction: t.reaction,
      namespace: t.resource?.namespace,
      name: t.resource?.name,
      generation: t.resource?.generation,
      attempt: t.attempt,
      terminal: o.value.terminal,
      reason: o.value.reason || undefined,
      error: o.value.message,
      trace_id: traceIdOf(t.traceparent),
    };
    if (o.value.terminal) this.s.logger.error("converge: task failed", fields);
    else this.s.logger.warn("converge: task failed", fields);
  }

  /**
   * drain stops taking tasks, gives back those not started, and waits,
   * bounded, for running handlers and the acknowledgement of their results;
   * what is still running at the drain timeout is given back too.
   */
  private async drain(): Promise<void> {
    const log = this.s.logger;
    this.ledger.startDrain();
    log.info("converge: worker draining", { running: this.ledger.busy() });
    const idle = (l: Ledger) => l.busy() === 0;
    if (!(await this.ledger.until(idle, this.s.drainTimeoutMs))) {
      const released = this.ledger.releaseRunning(
        "converge: the worker is shutting down and the drain timeout passed; the task was given back to the server",
      );
      log.warn("converge: drain timeout: giving the running tasks back to the server and aborting their handlers", {
        timeoutMs: this.s.drainTimeoutMs,
        released,
      });
      if (!(await this.ledger.until((l) => l.handlers() === 0, this.waits.drainGrace))) {
        log.error("converge: handlers ignored their abort signal; leaving them running", { running: this.ledger.handlers() });
      }
    }
    if (!(await this.ledger.until((l) => l.unacked() === 0 && l.unreleased() === 0, this.waits.drainAcks))) {
      log.warn("converge: results not acknowledged by the end of the drain; the server will re-dispatch their tasks", {
        unacked: this.ledger.unacked(),
      });
    }
  }

  /** notifyConfigs calls onConfig for queued changes, one at a time, until stop aborts. */
  private async notifyConfigs(stop: AbortSignal): Promise<void> {
    const onConfig = this.s.onConfig as NonNullable<Settings["onConfig"]>;
    while (!stop.aborted) {
      await this.configs.kick.wait();
      for (let c = this.configs.nextChange(); c && !stop.aborted; c = this.configs.nextChange()) {
        try {
          await onConfig(c.kind, c.version, c.value);
        } catch (e) {
          this.s.logger.error("converge: onConfig threw", { kind: c.kind, version: c.version, error: describeError(e) });
        }
      }
    }
  }
}

/**
 * refusesSubscription reports whether the server answered Subscribe with a
 * refusal of the subscription itself: it declares a reaction the kind does
 * not (FailedPrecondition), or the message breaks the protocol's rules
 * (InvalidArgument). Another attempt would be refused alike.
 */
function refusesSubscription(e: unknown): boolean {
  return e instanceof ConnectError && (e.code === Code.FailedPrecondition || e.code === Code.InvalidArgument);
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** traceIdOf is the trace id of a W3C traceparent, for log lines; undefined when there is none. */
function traceIdOf(tp: string): string | undefined {
  const m = /^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$/.exec(tp);
  return m && !/^0+$/.test(m[1]) ? m[1] : undefined;
}
