import { Worker, type WorkerOptions } from "@converge/sdk";
import { HelloV1 } from "./kinds.js";
import { reconcileHello } from "./hello.js";

/** helloWorker makes the worker serving kind hello; main.ts runs it, the tests run it against a fake server. */
export function helloWorker(options: WorkerOptions = {}): Worker {
  const w = new Worker({ capacity: 16, name: "hello-example", ...options });
  w.handle(HelloV1.kind, HelloV1.kindVersion, "reconcile", reconcileHello);
  return w;
}
