// The composer example: one worker serving the composer (webapp) and the
// two leaves it composes (database, service); kinds.yaml declares them. Run
// it against a server:
//
//   node build/test/examples/composer/main.js [--server URL]   (or env CONVERGE_SERVER)
//
// SIGTERM or Ctrl-C drains it.
import { Worker, shutdownSignal } from "@converge/sdk";
import { DatabaseV1, ServiceV1, WebappV1 } from "./kinds.js";
import { composeWebapp, reconcileDatabase, reconcileService } from "./webapp.js";

const i = process.argv.indexOf("--server");
const url = i > 0 ? process.argv[i + 1] : (process.env.CONVERGE_SERVER ?? "http://localhost:7070");

const w = new Worker({ url, name: "webapp-example" });
w.handle(WebappV1.kind, WebappV1.kindVersion, "compose", composeWebapp);
w.handle(DatabaseV1.kind, DatabaseV1.kindVersion, "reconcile", reconcileDatabase);
w.handle(ServiceV1.kind, ServiceV1.kindVersion, "reconcile", reconcileService);
await w.run(shutdownSignal());
