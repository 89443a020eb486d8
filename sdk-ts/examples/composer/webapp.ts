import { dependsOn, flowExpr, flowFrom, type Child, type Task } from "@converge/sdk";
import {
  DatabaseV1,
  ServiceV1,
  type DatabaseV1Handler,
  type DatabaseV1Spec,
  type ServiceV1Handler,
  type ServiceV1Spec,
  type WebappV1Handler,
  type WebappV1Spec,
  type WebappV1Status,
} from "./kinds.js";

/**
 * composeWebapp is the composer: a web app is a database and a service. The
 * service waits for the database, and two value flows write into its spec
 * before it runs: the database's endpoint as is (flowFrom, a JSON pointer
 * into the database's status) and a connection URL built from it (flowExpr,
 * a CEL expression over the database's status and spec).
 */
export const composeWebapp: WebappV1Handler = async (task: Task<WebappV1Spec, WebappV1Status>) => {
  const db: Child = {
    kind: DatabaseV1.kind,
    kindVersion: DatabaseV1.kindVersion,
    name: `${task.name}-db`,
    spec: { size: "small" } satisfies DatabaseV1Spec,
  };
  const svc: Child = {
    kind: ServiceV1.kind,
    kindVersion: ServiceV1.kindVersion,
    name: `${task.name}-svc`,
    labels: { app: task.name },
    spec: { image: task.spec.image, replicas: task.spec.replicas ?? 1 } satisfies ServiceV1Spec,
  };
  return {
    compose: true,
    children: [db, svc],
    edges: [
      dependsOn(
        svc,
        db,
        flowFrom("/endpoint", "/database_endpoint"),
        flowExpr(`"postgres://" + status.endpoint + "/${task.name}"`, "/database_url"),
      ),
    ],
    status: { components: 2 },
  };
};

/** reconcileDatabase "creates" a database: its status carries the endpoint the service needs. */
export const reconcileDatabase: DatabaseV1Handler = async (task) => {
  return { status: { endpoint: `${task.name}.db.internal:5432` } };
};

/**
 * reconcileService "deploys" the service. It runs only once the database
 * is synced, with the flowed values already in its spec.
 */
export const reconcileService: ServiceV1Handler = async (task) => {
  const { database_endpoint, database_url, replicas } = task.spec;
  if (!database_endpoint || !database_url) {
    // Cannot happen while the edge holds; transient, so it is retried.
    throw new Error("spec.database_endpoint is not set yet");
  }
  return { status: { url: `http://${task.name}.svc.internal (${replicas} replicas, db ${database_url})` } };
};
