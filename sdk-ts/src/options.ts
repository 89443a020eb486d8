import type { TlsFiles } from "./tls.js";
import type { Transport } from "@connectrpc/connect";
import { hostname } from "node:os";
import { checkMiddleware, type Middleware } from "./run.js";
import type { JsonObject } from "./task.js";
import { serverURL } from "./url.js";

/** Defaults of the worker options. */
export const defaults = {
  capacity: 16,
  drainTimeoutMs: 30_000,
  reconnectMinMs: 100,
  reconnectMaxMs: 10_000,
} as const;

// The protocol's bounds on Subscribe.
const maxCapacity = 10000;
const maxNameChars = 253;

/**
 * Logger receives the worker's log lines: connection changes, server
 * warnings, handler failures it could not report. `fields` holds structured
 * details. Pass {@link silentLogger} to silence the worker.
 */
export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

/** consoleLogger writes info and above to stderr, one line each, with fields as JSON. */
export const consoleLogger: Logger = {
  debug: () => {},
  info: (msg, fields) => console.error(line("INFO", msg, fields)),
  warn: (msg, fields) => console.error(line("WARN", msg, fields)),
  error: (msg, fields) => console.error(line("ERROR", msg, fields)),
};

/** silentLogger drops everything. */
export const silentLogger: Logger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

function line(level: string, msg: string, fields?: Record<string, unknown>): string {
  let extra = "";
  if (fields && Object.keys(fields).length > 0) {
    try {
      extra = " " + JSON.stringify(fields, (_, v) => (typeof v === "bigint" ? v.toString() : v instanceof Error ? v.message : v));
    } catch {
      extra = "";
    }
  }
  return `${new Date().toISOString()} ${level} ${msg}${extra}`;
}

/** Options of a {@link Worker}; all are optional. */
export interface WorkerOptions {
  /**
   * The server's URL: http:// for cleartext HTTP/2, https:// for TLS.
   * Default: the CONVERGE_SERVER environment variable, else
   * http://localhost:7070 (as for conctl). Not used with a transport.
   */
  url?: string;
  /**
   * How many handlers run at once, across all reactions: 1 to 10000,
   * default 16. The server never has more tasks outstanding on the worker.
   */
  capacity?: number;
  /**
   * A display name, shown in server logs; at most 253 characters. Default
   * "<hostname>-<pid>". Not an identity: the server identifies workers by
   * their connection.
   */
  name?: string;
  /** Where the worker logs; default {@link consoleLogger}. */
  logger?: Logger;
  /**
   * How long a drain waits for running handlers before handing their tasks
   * back to the server (another worker gets them at once) and aborting
   * their signals; default 30 s.
   */
  drainTimeoutMs?: number;
  /**
   * Bounds of the exponential backoff between reconnect attempts, default
   * 100 ms and 10 s. Before the n-th consecutive attempt the worker waits a
   * uniformly random time in [0, min(max, min·2ⁿ)]; the count restarts once
   * a stream is subscribed.
   */
  reconnectMinMs?: number;
  reconnectMaxMs?: number;
  /**
   * Called when the default provider config of a kind version the worker
   * serves arrives, changes or is removed (undefined), with the latest
   * value. Calls are made one at a time; when configs change faster than the
   * callback returns, intermediate values are skipped. A throw (or
   * rejection) is logged and the worker goes on.
   */
  onConfig?: (kind: string, version: number, config: JsonObject | undefined) => void | Promise<void>;
  /**
   * The Connect transport to dial with, e.g. one made with
   * createConnectTransport({httpVersion: "2", nodeOptions: {ca, cert, key}})
   * for mutual TLS. It must speak HTTP/2: the worker stream is
   * bidirectional. Default: HTTP/2 to url (h2c for http://), with pings
   * that break a silently dead connection.
   */
  transport?: Transport;
  /**
   * TLS files for the default transport (https:// URLs): the server's CA and,
   * for mutual TLS, a client certificate and key; fields left out come from
   * CONVERGE_TLS_CA, CONVERGE_TLS_CERT and CONVERGE_TLS_KEY.
   */
  tls?: TlsFiles;
  /**
   * A bearer token sent on the worker's stream by the default transport,
   * for a server that identifies callers by token (converge serve
   * --token-file); default CONVERGE_TOKEN. Not used with a transport.
   */
  token?: string;
  /**
   * Wraps every handler the worker runs, outside each reaction's own
   * middleware; the first is outermost. See {@link Middleware}.
   */
  middleware?: Middleware[];
}

/** Settings is WorkerOptions with defaults applied. */
export interface Settings {
  url: string;
  capacity: number;
  name: string;
  logger: Logger;
  drainTimeoutMs: number;
  reconnectMinMs: number;
  reconnectMaxMs: number;
  onConfig: WorkerOptions["onConfig"];
  transport: Transport | undefined;
  tls: TlsFiles | undefined;
  token: string | undefined;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  middleware: Middleware<any, any, any>[];
}

/** settings checks the options and applies defaults; it throws a TypeError or RangeError naming the option. */
export function settings(o: WorkerOptions): Settings {
  if (o === null || typeof o !== "object") {
    throw new TypeError("converge: new Worker(options): options must be an object");
  }
  const s: Settings = {
    // A transport of the caller's own dials wherever it was made for.
    url: o.transport && o.url === undefined ? "" : serverURL(o.url, "options.url"),
    capacity: o.capacity ?? defaults.capacity,
    name: o.name || `${hostname() || "worker"}-${process.pid}`,
    logger: o.logger ?? consoleLogger,
    drainTimeoutMs: o.drainTimeoutMs ?? defaults.drainTimeoutMs,
    reconnectMinMs: o.reconnectMinMs ?? defaults.reconnectMinMs,
    reconnectMaxMs: o.reconnectMaxMs ?? defaults.reconnectMaxMs,
    onConfig: o.onConfig,
    transport: o.transport,
    tls: o.tls,
    token: (o.token ?? process.env.CONVERGE_TOKEN)?.trim() || undefined,
    middleware: checkMiddleware(o.middleware, "options.middleware"),
  };
  if (!Number.isInteger(s.capacity) || s.capacity < 1 || s.capacity > maxCapacity) {
    throw new RangeError(`converge: options.capacity: ${s.capacity} must be an integer between 1 and ${maxCapacity}`);
  }
  if ([...s.name].length > maxNameChars) {
    throw new RangeError(`converge: options.name: ${[...s.name].length} characters, more than ${maxNameChars}`);
  }
  if (!(s.drainTimeoutMs > 0)) {
    throw new RangeError(`converge: options.drainTimeoutMs: ${s.drainTimeoutMs} must be positive`);
  }
  if (!(s.reconnectMinMs > 0) || !(s.reconnectMaxMs >= s.reconnectMinMs)) {
    throw new RangeError(
      `converge: options.reconnectMinMs/reconnectMaxMs: ${s.reconnectMinMs}/${s.reconnectMaxMs}: need 0 < min <= max`,
    );
  }
  if (s.token !== undefined && /\s/.test(s.token)) {
    throw new TypeError("converge: options.token: a bearer token has no whitespace");
  }
  if (s.onConfig !== undefined && typeof s.onConfig !== "function") {
    throw new TypeError("converge: options.onConfig: must be a function");
  }
  return s;
}
