import { create } from "@bufbuild/protobuf";
import { TaskEventSchema, type Lease, type Task as TaskMessage, type TaskEvent as TaskEventMessage } from "../gen/converge/v1/worker_pb.js";
import { messages, type Report } from "./chunk.js";
import { eventQueueFull, maxQueuedEvents, type TaskEvent } from "./event.js";
import type { Handler } from "./task.js";
import { maxTimerMs } from "./wake.js";

// Limits on what the worker holds; they match the protocol's list limits.
export const ledgerLimits = {
  /** Results buffered at most before the worker stops starting tasks. */
  maxUnacked: 10000,
  /** Tasks waiting for a free slot at most; beyond that a task is dropped unattested. */
  maxWaiting: 10000,
  /** Leases in one Heartbeat or Subscribe at most. */
  maxListed: 10000,
};

/** Reasons a task is not accepted. */
export const notAccepted = {
  draining: "worker is draining",
  duplicate: "task already held",
  queueFull: "too many tasks waiting for a free slot",
} as const;

/** keyOf identifies one claim of one task. */
export function keyOf(l: Lease | undefined): string {
  return `${l?.taskId ?? 0n}/${l?.epoch ?? 0n}`;
}

/** Execution is one accepted task: waiting for a slot, then running. */
export interface Execution {
  key: string;
  task: TaskMessage;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  handler: Handler<any, any, any>;
  controller: AbortController;
  deadlineTimer: ReturnType<typeof setTimeout> | undefined;
  /**
   * Set when the server cancelled the task or declared its lease lost: the
   * handler is aborted, no longer attested, and its result is dropped.
   */
  abandoned: boolean;
}

interface Pending {
  rep: Report;
  seq: number;
}

/**
 * Ledger is the worker's state that outlives any one stream: which tasks
 * wait or run, and which results await acknowledgement. It decides when a
 * task may start (free slot, room in the result buffer) and what a
 * stream's sender must send. It does no I/O.
 */
export class Ledger {
  readonly limits = { ...ledgerLimits };
  private readonly running = new Map<string, Execution>();
  private readonly waiting = new Map<string, Execution>();
  private readonly results = new Map<string, Pending>();
  /** Results the live stream has not sent yet, oldest first. */
  private unsent: string[] = [];
  private seq = 0;
  /** Leases to give back on the live stream (Release): tasks the worker will not finish. */
  private releases: Lease[] = [];
  /** Task events waiting for a stream; they outlive a stream, as a running task's lease may. */
  private events: TaskEventMessage[] = [];
  private live = false;
  draining = false;
  /** Wakes the live stream's sender. */
  private kick: (() => void) | undefined;
  private readonly watchers = new Set<() => void>();

  constructor(private readonly capacity: number) {}

  /** accept takes a dispatched task and returns the executions that may start now, or why it is refused. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  accept(t: TaskMessage, handler: Handler<any, any, any>): Execution[] | string {
    const k = keyOf(t.lease);
    if (this.draining) {
      // Sent before the server saw the Drain: give it back at once.
      this.release(t.lease as Lease);
      return notAccepted.draining;
    }
    if (this.running.has(k) || this.waiting.has(k) || this.results.has(k)) {
      return notAccepted.duplicate;
    }
    if (this.waiting.size >= this.limits.maxWaiting) {
      return notAccepted.queueFull;
    }
    this.waiting.set(k, {
      key: k,
      task: t,
      handler,
      controller: new AbortController(),
      deadlineTimer: undefined,
      abandoned: false,
    });
    return this.startable();
  }

  /**
   * startable moves waiting tasks to running while a slot is free and the
   * result buffer has room, and returns them for the caller to launch. A
   * Map iterates in insertion order, so tasks start first come, first
   * served.
   */
  private startable(): Execution[] {
    const out: Execution[] = [];
    for (const [k, ex] of this.waiting) {
      if (this.running.size >= this.capacity || this.results.size >= this.limits.maxUnacked) {
        break;
      }
      this.waiting.delete(k);
      const d = ex.task.deadline;
      if (d) {
        const ms = Number(d.seconds) * 1000 + d.nanos / 1e6 - Date.now();
        const abort = () => ex.controller.abort(new Error("converge: task deadline passed"));
        if (ms <= 0) {
          abort();
        } else {
          ex.deadlineTimer = setTimeout(abort, Math.min(ms, maxTimerMs));
          ex.deadlineTimer.unref?.();
        }
      }
      this.running.set(k, ex);
      out.push(ex);
    }
    return out;
  }

  /** finish records a handler's report and returns the executions that may start in its place. */
  finish(ex: Execution, rep: Report): Execution[] {
    clearTimeout(ex.deadlineTimer);
    if (this.running.get(ex.key) === ex) {
      this.running.delete(ex.key);
    }
    if (!ex.abandoned) {
      this.results.set(ex.key, { rep, seq: ++this.seq });
      if (this.live) {
        this.unsent.push(ex.key);
        this.kick?.();
      }
    }
    this.changed();
    return this.startable();
  }

  /** ack forgets an acknowledged result and returns the executions that may start now. */
  ack(k: string): Execution[] {
    if (!this.results.delete(k)) {
      return [];
    }
    this.changed();
    return this.startable();
  }

  /**
   * abandon stops a task the server no longer wants from us: its handler is
   * aborted and its result, now or later, is dropped. It reports whether the
   * worker held the task.
   */
  abandon(k: string, why: string): boolean {
    let held = false;
    const ex = this.running.get(k);
    if (ex && !ex.abandoned) {
      ex.abandoned = true;
      ex.controller.abort(new Error(`converge: task cancelled by the server: ${why}`));
      held = true;
    }
    if (this.waiting.delete(k)) {
      held = true;
    }
    if (this.results.delete(k)) {
      held = true;
    }
    if (held) {
      this.changed();
    }
    return held;
  }

  /** attested lists the leases a Heartbeat attests: running handlers and tasks waiting for a slot. */
  attested(): Lease[] {
    const out: Lease[] = [];
    for (const ex of this.running.values()) {
      if (!ex.abandoned && out.length < this.limits.maxListed) {
        out.push(ex.task.lease as Lease);
      }
    }
    for (const ex of this.waiting.values()) {
      if (out.length < this.limits.maxListed) {
        out.push(ex.task.lease as Lease);
      }
    }
    return out;
  }

  /** resumable lists the leases a new stream's Subscribe resumes: attested tasks, then unacknowledged results. */
  resumable(): Lease[] {
    const out = this.attested();
    for (const p of this.results.values()) {
      if (out.length < this.limits.maxListed) {
        out.push(p.rep.result.lease as Lease);
      }
    }
    return out;
  }

  /**
   * beginSession is called when a stream is subscribed: it drops the leases
   * the server declared lost and queues every unacknowledged result for
   * (re-)sending on the new stream, oldest first. Resumed leases the server
   * did not declare lost are kept, whether it listed them as adopted or not.
   */
  beginSession(lost: Lease[], kick: () => void): void {
    for (const l of lost) {
      this.abandon(keyOf(l), "lease lost while the worker was away");
    }
    this.live = true;
    this.kick = kick;
    this.unsent = [...this.results.entries()].sort((a, b) => a[1].seq - b[1].seq).map(([k]) => k);
    kick();
  }

  /**
   * endSession is called when a stream breaks; results wait for the next
   * one. Releases do not: the server takes them only on the stream that
   * holds the leases, so those tasks run again after their lease instead.
   */
  endSession(): void {
    this.live = false;
    this.kick = undefined;
    this.unsent = [];
    this.releases = [];
    this.changed();
  }

  /** takeReleases returns the leases to give back, at most maxListed, and forgets them. */
  takeReleases(): Lease[] {
    const out = this.releases.splice(0, this.limits.maxListed);
    if (this.releases.length > 0) {
      this.kick?.();
    }
    if (out.length > 0) {
      this.changed();
    }
    return out;
  }

  /** unreleased counts the leases not yet given back. */
  unreleased(): number {
    return this.releases.length;
  }

  /** release queues a lease to be given back, if a stream can take it. */
  private release(l: Lease): void {
    if (this.live) {
      this.releases.push(l);
      this.kick?.();
    }
  }

  /**
   * takeUnsent returns the oldest results the live stream has not sent yet,
   * whole, as long as they need at most max messages in all (the first is
   * taken whatever it needs), and whether more remain. They stay buffered
   * until acked.
   */
  takeUnsent(max: number): { reps: Report[]; more: boolean } {
    const reps: Report[] = [];
    let n = 0;
    let i = 0;
    for (; i < this.unsent.length; i++) {
      const p = this.results.get(this.unsent[i]);
      if (!p) {
        continue;
      }
      if (n > 0 && n + messages(p.rep) > max) {
        break;
      }
      reps.push(p.rep);
      n += messages(p.rep);
    }
    this.unsent = i === this.unsent.length ? [] : this.unsent.slice(i);
    return { reps, more: this.unsent.length > 0 };
  }

  /**
   * queueEvent queues a running task's event for the stream. An event of a
   * task the worker no longer runs for the server (cancelled, its lease
   * lost, given back) is dropped quietly: the server would drop it.
   */
  queueEvent(ex: Execution, e: TaskEvent): void {
    if (ex.abandoned || this.running.get(ex.key) !== ex) {
      return;
    }
    if (this.events.length >= maxQueuedEvents) {
      throw new Error(eventQueueFull);
    }
    this.events.push(create(TaskEventSchema, { lease: ex.task.lease, ...e }));
    this.kick?.();
  }

  /**
   * takeEvents returns the queued events, oldest first, and forgets them.
   * The sender takes them after the results it sends in the same round, so
   * an event queued before its task's result goes out before it.
   */
  takeEvents(): TaskEventMessage[] {
    return this.events.splice(0);
  }

  /**
   * startDrain stops the worker taking tasks: waiting tasks are given back
   * to the server, which re-dispatches them at once, and later ones are
   * refused.
   */
  startDrain(): void {
    this.draining = true;
    for (const ex of this.waiting.values()) {
      this.release(ex.task.lease as Lease);
    }
    this.waiting.clear();
    this.kick?.();
    this.changed();
  }

  /**
   * releaseRunning gives every running task back to the server: its handler
   * is aborted with reason and its result, now or later, dropped, as for
   * abandon. It returns how many it gave back.
   */
  releaseRunning(reason: string): number {
    let n = 0;
    for (const ex of this.running.values()) {
      if (!ex.abandoned) {
        ex.abandoned = true;
        ex.controller.abort(new Error(reason));
        this.release(ex.task.lease as Lease);
        n++;
      }
    }
    this.changed();
    return n;
  }

  /** abandonRunning aborts every running handler and drops its result, for a worker that stops without a stream. */
  abandonRunning(reason: string): void {
    for (const ex of this.running.values()) {
      ex.abandoned = true;
      ex.controller.abort(new Error(reason));
    }
    this.changed();
  }

  /** handlers counts the running handlers, abandoned ones included. */
  handlers(): number {
    return this.running.size;
  }

  /** busy counts the running handlers whose results will be reported. */
  busy(): number {
    let n = 0;
    for (const ex of this.running.values()) {
      if (!ex.abandoned) n++;
    }
    return n;
  }

  /** unacked counts buffered results. */
  unacked(): number {
    return this.results.size;
  }

  /** until resolves true once cond holds, or false after timeoutMs. */
  until(cond: (l: Ledger) => boolean, timeoutMs: number): Promise<boolean> {
    if (cond(this)) {
      return Promise.resolve(true);
    }
    return new Promise((resolve) => {
      const check = () => {
        if (cond(this)) {
          done(true);
        }
      };
      const done = (ok: boolean) => {
        clearTimeout(timer);
        this.watchers.delete(check);
        resolve(ok);
      };
      const timer = setTimeout(() => done(false), Math.min(timeoutMs, maxTimerMs));
      this.watchers.add(check);
    });
  }

  private changed(): void {
    for (const w of [...this.watchers]) {
      w();
    }
  }
}
