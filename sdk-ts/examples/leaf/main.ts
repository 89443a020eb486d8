// The leaf example: a worker serving kind hello (hello.yaml) with one
// handler. Run it against a server:
//
//   node build/test/examples/leaf/main.js [--server URL]   (default: env CONVERGE_SERVER, else http://localhost:7070)
//
// SIGTERM or Ctrl-C drains it.
import { shutdownSignal } from "@converge/sdk";
import { helloWorker } from "./worker.js";

const i = process.argv.indexOf("--server");
await helloWorker(i > 0 ? { url: process.argv[i + 1] ?? "" } : {}).run(shutdownSignal());
