import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { LeaseSchema, TaskSchema, type Lease, type Task } from "../gen/converge/v1/worker_pb.js";
import { Worker } from "../src/worker.js";
import { silentLogger, type WorkerOptions } from "../src/options.js";
import type { FakeServer } from "../src/testing/index.js";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function json(v: unknown): Uint8Array {
  return encoder.encode(JSON.stringify(v));
}

export function parse(b: Uint8Array): unknown {
  return JSON.parse(decoder.decode(b));
}

export function lease(id: number, epoch = 1, generation = 1): Lease {
  return create(LeaseSchema, { taskId: BigInt(id), epoch: BigInt(epoch), generation: BigInt(generation) });
}

/** task makes a wire task for kind "greeting" v1 reaction "reconcile" unless overridden. */
export function task(id: number, over: Record<string, unknown> = {}, spec: unknown = { name: "world" }): Task {
  return create(TaskSchema, {
    lease: lease(id),
    kind: "greeting",
    kindVersion: 1,
    reaction: "reconcile",
    trigger: "specChange",
    attempt: 1,
    dedupToken: `tok-${id}`,
    resource: { namespace: "default", name: `r${id}`, uid: `u${id}`, generation: 1n, spec: json(spec) },
    ...over,
  } as MessageInitShape<typeof TaskSchema>);
}

/** worker makes a worker for the fake with short waits and no logging. */
export function worker(fake: FakeServer, opts: Partial<WorkerOptions> = {}): Worker {
  const w = new Worker({ url: fake.url, logger: silentLogger, reconnectMinMs: 10, reconnectMaxMs: 50, ...opts });
  w.waits = { drainGrace: 200, drainAcks: 100, closeStream: 200, subscribed: 2000 };
  return w;
}

/** Gate is a promise a test resolves by hand, to hold handlers. */
export class Gate {
  readonly promise: Promise<void>;
  open!: () => void;
  constructor() {
    this.promise = new Promise((r) => (this.open = r));
  }
}

/** eventually polls cond until it holds, failing after ms. */
export async function eventually(cond: () => boolean, what: string, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) {
      throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    }
    await new Promise((r) => setTimeout(r, 5));
  }
}
