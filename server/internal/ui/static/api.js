// The REST API (/api/v1), called with the browser's own credentials: a
// client certificate over mutual TLS, or a bearer token the user typed,
// kept in sessionStorage (gone when the tab closes).

const TOKEN_KEY = 'converge.token';

/** token returns the bearer token typed into this tab, or ''. */
export function token() {
  return sessionStorage.getItem(TOKEN_KEY) || '';
}

/** setToken keeps (or, with '', forgets) the bearer token. */
export function setToken(t) {
  if (t) sessionStorage.setItem(TOKEN_KEY, t);
  else sessionStorage.removeItem(TOKEN_KEY);
}

/** ApiError is a refused or failed API call, with the server's message. */
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message || `HTTP ${status}`);
    this.status = status;
    this.code = code;
  }
}

function headers(json) {
  const h = {};
  if (json) h['Content-Type'] = 'application/json';
  const t = token();
  if (t) h.Authorization = `Bearer ${t}`;
  return h;
}

function queryString(q) {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(q || {})) {
    if (v === undefined || v === null || v === '' || v === false) continue;
    for (const one of Array.isArray(v) ? v : [v]) p.append(k, String(one));
  }
  const s = p.toString();
  return s ? `?${s}` : '';
}

/** call makes one API request and returns the decoded JSON answer. */
export async function call(path, { method = 'GET', query, body } = {}) {
  const res = await fetch(`/api/v1${path}${queryString(query)}`, {
    method,
    headers: headers(body !== undefined),
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: 'same-origin',
  });
  const text = await res.text();
  let data = {};
  try {
    data = text ? JSON.parse(text) : {};
  } catch {
    data = { message: text };
  }
  if (!res.ok) throw new ApiError(res.status, data.code, data.message || text);
  return data;
}

const seg = encodeURIComponent;

/** resourcePath is a resource's REST path. */
export function resourcePath(ref) {
  return `/namespaces/${seg(ref.namespace || 'default')}/resources/${seg(ref.kind)}/${seg(ref.name)}`;
}

export const listResources = (q) => call('/resources', { query: { summary: true, ...q } });
export const countResources = (q) => call('/resourcecounts', { query: q });
export const getResource = (ref) => call(resourcePath(ref)).then((r) => r.resource);
export const getGraph = (ref) => call(`${resourcePath(ref)}/graph`);
export const getHistory = (ref, q) => call(`${resourcePath(ref)}/history`, { query: q });
export const listTaskRecords = (ref, q) => call(`${resourcePath(ref)}/tasks`, { query: q });
export const getTaskRecord = (id) => call(`/task-records/${seg(String(id))}`);
export const listEvents = (ref) =>
  call('/events', { query: { namespace: ref.namespace, kind: ref.kind, name: ref.name, page_size: 50 } });
export const rollback = (ref, generation, reason) =>
  call(`${resourcePath(ref)}/rollback`, { method: 'POST', body: { generation: String(generation), reason } });
export const quarantine = (ref, reason) => call(`${resourcePath(ref)}/quarantine`, { method: 'POST', body: { reason } });
export const unquarantine = (ref, reason) =>
  call(`${resourcePath(ref)}/unquarantine`, { method: 'POST', body: { reason } });
export const reconcile = (ref, reason) => call(`${resourcePath(ref)}/reconcile`, { method: 'POST', body: { reason } });
export const planChange = (change) => call('/plans', { method: 'POST', body: change });
export const applyResource = (req) => call('/resources', { method: 'POST', body: req });
export const listRollouts = (kind) => call('/rollouts', { query: { kind } }).then((r) => r.rollouts || []);
export const getRollout = (id) => call(`/rollouts/${seg(String(id))}`).then((r) => r.rollout);
const rolloutAction = (what) => (id, reason) => call(`/rollouts/${seg(String(id))}/${what}`, { method: 'POST', body: { reason } }).then((r) => r.rollout);
export const pauseRollout = rolloutAction('pause');
export const resumeRollout = rolloutAction('resume');
export const abortRollout = rolloutAction('abort');
export const rollbackRollout = rolloutAction('rollback');
export const listKinds = () => call('/kinds').then((r) => r.manifests || []);
export const getKind = (kind, version) =>
  call(`/kinds/${seg(kind)}/versions/${seg(version)}`).then((r) => r.manifest);
export const listConfigs = (kind, version) =>
  call('/providerconfigs', { query: { kind, kind_version: version } }).then((r) => r.configs || []);
export const getCluster = () => call('/cluster');
export const whoAmI = () => call('/whoami');

/**
 * watch follows the NDJSON Watch stream from cursor, calling onChanges with
 * each message's changes. A dropped stream reconnects from the last cursor
 * seen, so no change is missed. onStatus hears 'live', 'reconnecting' or an
 * error message. The returned function stops watching.
 */
export function watch(filter, cursor, onChanges, onStatus = () => {}) {
  let stopped = false;
  let ctl = null;
  let delay = 500;
  let last = cursor || '';
  async function run() {
    while (!stopped) {
      ctl = new AbortController();
      try {
        const res = await fetch(`/api/v1/watch${queryString({ ...filter, cursor: last })}`, {
          headers: headers(false),
          credentials: 'same-origin',
          signal: ctl.signal,
        });
        if (!res.ok) {
          const text = await res.text();
          let msg = text;
          try {
            msg = JSON.parse(text).message || text;
          } catch {
            /* plain text error */
          }
          // An expired cursor cannot resume: start from now.
          if (res.status === 400 || res.status === 410) last = '';
          throw new Error(msg.trim() || `HTTP ${res.status}`);
        }
        const reader = res.body.getReader();
        const dec = new TextDecoder();
        let buf = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += dec.decode(value, { stream: true });
          let i;
          while ((i = buf.indexOf('\n')) >= 0) {
            const line = buf.slice(0, i).trim();
            buf = buf.slice(i + 1);
            if (!line) continue;
            const msg = JSON.parse(line);
            if (msg.cursor) last = msg.cursor;
            delay = 500;
            onStatus('live');
            if (msg.changes && msg.changes.length) onChanges(msg.changes);
          }
        }
      } catch (err) {
        if (stopped) return;
        onStatus(err.message || String(err));
      }
      if (stopped) return;
      onStatus('reconnecting');
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 10000);
    }
  }
  run();
  return () => {
    stopped = true;
    if (ctl) ctl.abort();
  };
}
