import { readFileSync } from "node:fs";

/**
 * PEM files for TLS to the server: the CA to verify it with (default: the
 * system's), and a client certificate and key for mutual TLS. A field left
 * out is taken from the environment variable conctl and stdworker read
 * too: CONVERGE_TLS_CA, CONVERGE_TLS_CERT, CONVERGE_TLS_KEY.
 */
export interface TlsFiles {
  caFile?: string;
  certFile?: string;
  keyFile?: string;
}

/** The node TLS options for files (and the environment), or undefined when none is set. */
export function tlsNodeOptions(
  files: TlsFiles | undefined,
  env: Record<string, string | undefined> = process.env,
): { ca?: Buffer; cert?: Buffer; key?: Buffer } | undefined {
  const ca = files?.caFile ?? env.CONVERGE_TLS_CA;
  const cert = files?.certFile ?? env.CONVERGE_TLS_CERT;
  const key = files?.keyFile ?? env.CONVERGE_TLS_KEY;
  if (!ca && !cert && !key) {
    return undefined;
  }
  if (Boolean(cert) !== Boolean(key)) {
    throw new TypeError(
      `converge: tls.certFile and tls.keyFile (or CONVERGE_TLS_CERT and CONVERGE_TLS_KEY) go together; only ${cert ? "a certificate" : "a key"} is set`,
    );
  }
  const read = (what: string, file: string): Buffer => {
    try {
      return readFileSync(file);
    } catch (err) {
      throw new TypeError(`converge: reading the TLS ${what} ${file}: ${(err as Error).message}`);
    }
  };
  return {
    ...(ca ? { ca: read("CA", ca) } : {}),
    ...(cert ? { cert: read("certificate", cert) } : {}),
    ...(key ? { key: read("key", key) } : {}),
  };
}

/** Spreads node TLS options into createConnectTransport's options when there are any. */
export function withNodeOptions(o: ReturnType<typeof tlsNodeOptions>): { nodeOptions?: { ca?: Buffer; cert?: Buffer; key?: Buffer } } {
  return o ? { nodeOptions: o } : {};
}
