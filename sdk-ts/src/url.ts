/** Where a local server listens by default, as for conctl. */
export const defaultBaseUrl = "http://localhost:7070";

/** The environment variable naming the server when no URL is given, as for conctl. */
export const serverEnv = "CONVERGE_SERVER";

/**
 * serverURL picks the server's URL: the given one, else CONVERGE_SERVER
 * (when set and not empty), else {@link defaultBaseUrl}. It throws a
 * TypeError naming where the URL came from when it is not an absolute
 * http:// or https:// URL with a host.
 */
export function serverURL(given: string | undefined, option: string, env: NodeJS.ProcessEnv = process.env): string {
  if (given !== undefined) {
    checkURL(given, option);
    return given;
  }
  const fromEnv = env[serverEnv];
  if (fromEnv) {
    checkURL(fromEnv, `the ${serverEnv} environment variable`);
    return fromEnv;
  }
  return defaultBaseUrl;
}

/** checkURL accepts an absolute http:// or https:// URL with a host; source names where it came from. */
export function checkURL(raw: unknown, source: string): void {
  const where = `converge: server URL ${JSON.stringify(raw)} (from ${source})`;
  if (typeof raw !== "string") {
    throw new TypeError(`${where}: must be a string, e.g. ${defaultBaseUrl}`);
  }
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new TypeError(`${where}: not a valid URL, e.g. ${defaultBaseUrl}`);
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") {
    throw new TypeError(`${where}: scheme must be http or https, e.g. ${defaultBaseUrl}`);
  }
  if (u.host === "") {
    throw new TypeError(`${where}: host is missing`);
  }
}
