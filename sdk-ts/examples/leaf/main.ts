// The leaf example: a worker serving kind hello (hello.yaml) with one
// handler. Run it against a server:
//
//   node build/test/examples/leaf/main.js [--server URL]   (or env CONVERGE_SERVER)
//
// SIGTERM or Ctrl-C drains it.
import { Worker, shutdownSignal } from "@converge/sdk";
import { HelloV1 } from "./kinds.js";
import { reconcileHello } from "./hello.js";

const i = process.argv.indexOf("--server");
const url = i > 0 ? process.argv[i + 1] : (process.env.CONVERGE_SERVER ?? "http://localhost:7070");

const w = new Worker({ url, capacity: 16, name: "hello-example" });
w.handle(HelloV1.kind, HelloV1.kindVersion, "reconcile", reconcileHello);
await w.run(shutdownSignal());
