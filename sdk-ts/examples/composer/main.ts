// The composer example: one worker serving the composer (webapp) and the
// two leaves it composes (database, service); kinds.yaml declares them. Run
// it against a server:
//
//   node build/test/examples/composer/main.js [--server URL]   (default: env CONVERGE_SERVER, else http://localhost:7070)
//
// SIGTERM or Ctrl-C drains it.
import { shutdownSignal } from "@converge/sdk";
import { webappWorker } from "./worker.js";

const i = process.argv.indexOf("--server");
await webappWorker(i > 0 ? { url: process.argv[i + 1] ?? "" } : {}).run(shutdownSignal());
