// The UI's entry point: the router, the credentials form and the caller's
// identity, which pages use to grey out actions the caller may not take.

import * as api from './api.js';
import { h, replace } from './dom.js';
import { resourcesPage } from './pages/resources.js';
import { resourcePage } from './pages/resource.js';
import { kindsPage, kindPage } from './pages/kinds.js';
import { clusterPage } from './pages/cluster.js';

const main = document.getElementById('main');
let cleanup = () => {};

/** session is what pages know about the caller. */
export const session = {
  me: null,
  /**
   * canWrite reports whether the caller may write resources of a kind owned by owner in
   * namespace: a global role, the owner team, or a writer grant covering the namespace (the
   * server decides; this only greys out buttons).
   */
  canWrite(owner, namespace) {
    const me = this.me;
    if (!me) return false;
    if (!me.authorization_enabled) return true;
    const roles = me.roles || [];
    if (roles.includes('admin') || roles.includes('writer')) return true;
    if (!!owner && (me.teams || []).includes(owner)) return true;
    return (me.grants || []).some((g) => {
      const [role, patterns] = g.split(':');
      return role === 'writer' && (patterns || '').split(',').some((p) =>
        p.endsWith('*') ? (namespace || '').startsWith(p.slice(0, -1)) : p === namespace);
    });
  },
  /** canOwn reports whether the caller may change a kind owned by owner (its policy, its rollouts). */
  canOwn(owner) {
    const me = this.me;
    if (!me) return false;
    if (!me.authorization_enabled || (me.roles || []).includes('admin')) return true;
    return !!owner && (me.teams || []).includes(owner);
  },
};

const routes = [
  [/^\/(?:resources\/?)?$/, () => ['resources', resourcesPage]],
  [/^\/resources\/([^/]+)\/([^/]+)\/([^/]+)\/?$/, (m) => ['resources', resourcePage, { namespace: m[1], kind: m[2], name: m[3] }]],
  [/^\/kinds\/?$/, () => ['kinds', kindsPage]],
  [/^\/kinds\/([^/]+)\/(\d+)\/?$/, (m) => ['kinds', kindPage, { kind: m[1], version: Number(m[2]) }]],
  [/^\/cluster\/?$/, () => ['cluster', clusterPage]],
];

function decodeParams(p) {
  if (!p) return p;
  const out = {};
  for (const [k, v] of Object.entries(p)) out[k] = typeof v === 'string' ? decodeURIComponent(v) : v;
  return out;
}

/** navigate shows url without a page load. */
export function navigate(url, { replaceState = false } = {}) {
  if (replaceState) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  render();
}

function render() {
  cleanup();
  cleanup = () => {};
  const path = location.pathname;
  for (const [re, make] of routes) {
    const m = path.match(re);
    if (!m) continue;
    const [nav, page, params] = make(m);
    for (const a of document.querySelectorAll('[data-nav]')) a.classList.toggle('active', a.dataset.nav === nav);
    replace(main);
    const done = page(main, { params: decodeParams(params), query: new URLSearchParams(location.search), navigate, session });
    if (typeof done === 'function') cleanup = done;
    return;
  }
  replace(main, h('h1', {}, 'Not found'), h('p', {}, `No page at ${path}.`));
}

async function loadIdentity() {
  const el = document.getElementById('whoami');
  try {
    session.me = await api.whoAmI();
    const me = session.me;
    const who = me.identity || (me.authorization_enabled ? 'anonymous' : 'development mode (no authorization)');
    const roles = [...(me.roles || []), ...(me.grants || []), ...(me.teams || []).map((t) => `team ${t}`)];
    replace(el, who, roles.length ? ` · ${roles.join(', ')}` : '');
    el.title = me.authorization_enabled ? 'as the server identifies you' : 'the server has no authorization rules: every caller may do everything';
  } catch (err) {
    session.me = null;
    replace(el, h('span', { class: 'error-inline' }, err.message));
  }
}

document.addEventListener('click', (ev) => {
  const a = ev.target.closest && ev.target.closest('a[data-link]');
  if (!a || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.altKey) return;
  const url = new URL(a.href, location.href);
  if (url.origin !== location.origin) return;
  ev.preventDefault();
  navigate(url.pathname + url.search);
});
window.addEventListener('popstate', render);

document.getElementById('auth').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const input = document.getElementById('token');
  api.setToken(input.value.trim());
  input.value = '';
  input.placeholder = api.token() ? 'token set (empty: clear)' : 'bearer token (optional)';
  await loadIdentity();
  render();
});
if (api.token()) document.getElementById('token').placeholder = 'token set (empty: clear)';

loadIdentity().then(render);
