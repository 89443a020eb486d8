import { Worker, type WorkerOptions } from "@converge/sdk";
import { DatabaseV1, ServiceV1, WebappV1 } from "./kinds.js";
import { composeWebapp, reconcileDatabase, reconcileService } from "./webapp.js";

/**
 * webappWorker makes the worker serving the composer (webapp) and the two
 * leaves it composes (database, service); main.ts runs it, the tests run it
 * against a fake server.
 */
export function webappWorker(options: WorkerOptions = {}): Worker {
  const w = new Worker({ name: "webapp-example", ...options });
  w.handle(WebappV1.kind, WebappV1.kindVersion, "compose", composeWebapp);
  w.handle(DatabaseV1.kind, DatabaseV1.kindVersion, "reconcile", reconcileDatabase);
  w.handle(ServiceV1.kind, ServiceV1.kindVersion, "reconcile", reconcileService);
  return w;
}
