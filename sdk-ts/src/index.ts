export { Worker, type HandlerOptions } from "./worker.js";
export { type WorkerOptions, type Logger, consoleLogger, silentLogger, defaults } from "./options.js";
export {
  type Task,
  type Handler,
  type HandlerResult,
  type JsonObject,
  type Rollup,
  type Culprit,
  type Operation,
  type ReactorEvent,
  Transition,
} from "./task.js";
export { EventType, type EventTypeName, type TaskEvent } from "./event.js";
export { type Middleware } from "./run.js";
export { defaultBaseUrl, serverEnv } from "./url.js";
export { type Result, type Condition, type ConditionStatus } from "./result.js";
export { type Child, type Ref, type Edge, type Flow, refTo, dependsOn, flowFrom, flowExpr } from "./compose.js";
export {
  terminal,
  isTerminal,
  TerminalError,
  withReason,
  reasonOf,
  ReasonError,
  retryAfter,
  retryAfterOf,
  RetryAfterError,
  importNotFound,
  importNotFoundReason,
} from "./errors.js";
export { noConfigReason } from "./readiness.js";
export { shutdownSignal } from "./shutdown.js";
export { type TlsFiles, tlsNodeOptions } from "./tls.js";
export { version } from "./version.js";
export {
  Client,
  type ClientOptions,
  type ResourceInput,
  type WaitOptions,
  defaultNamespace,
  readAfterHeader,
} from "./client.js";
export { Phase, type PhaseName, isReady, settled } from "./phase.js";
export { parseDocuments, toDocument, type Document } from "./documents.js";
export { Code, ConnectError } from "@connectrpc/connect";
export type { Resource, KindManifest, Change } from "../gen/converge/v1/types_pb.js";
export type { WatchResponse } from "../gen/converge/v1/control_pb.js";
