// The resources page: counts by phase, a filterable list in keyset pages,
// kept current by the Watch stream.

import * as api from '../api.js';
import { debounce, errorBox, h, link, phaseBadge, replace, time } from '../dom.js';

export const PHASES = ['Deleting', 'Quarantined', 'Failed', 'Orphaned', 'Degraded', 'Ready', 'Reconciling'];
const PAGE_SIZE = 50;

/** resourceHref is the UI's address of a resource. */
export function resourceHref(r) {
  const e = encodeURIComponent;
  return `/resources/${e(r.namespace || 'default')}/${e(r.kind)}/${e(r.name)}`;
}

function readFilter(query) {
  return {
    phases: query.getAll('phase').filter((p) => PHASES.includes(p)),
    kind: query.get('kind') || '',
    namespace: query.get('namespace') || '',
    label: query.get('label') || '',
    name: query.get('name') || '',
  };
}

function filterURL(f) {
  const q = new URLSearchParams();
  for (const p of f.phases) q.append('phase', p);
  for (const k of ['kind', 'namespace', 'label', 'name']) if (f[k]) q.set(k, f[k]);
  const s = q.toString();
  return s ? `/?${s}` : '/';
}

export function resourcesPage(root, { query, navigate }) {
  const f = readFilter(query);
  const go = (next) => navigate(filterURL(next));
  const base = { namespace: f.namespace, kind: f.kind, label_selector: f.label, name_contains: f.name };

  const countsEl = h('div', { class: 'counts', 'aria-label': 'resources by phase' });
  const listEl = h('div', { class: 'list' });
  const liveEl = h('span', { class: 'live', title: 'Watch stream' }, 'connecting…');
  const kindSelect = h('select', { name: 'kind', 'aria-label': 'kind' }, h('option', { value: '' }, 'any kind'));
  const form = h('form', { class: 'filters', onsubmit: (ev) => {
    ev.preventDefault();
    const d = new FormData(form);
    go({ ...f, kind: d.get('kind'), namespace: d.get('namespace').trim(), label: d.get('label').trim(), name: d.get('name').trim() });
  } },
  kindSelect,
  h('input', { name: 'namespace', placeholder: 'namespace', value: f.namespace, 'aria-label': 'namespace' }),
  h('input', { name: 'label', placeholder: 'labels: team=web,!legacy', value: f.label, 'aria-label': 'label selector' }),
  h('input', { name: 'name', placeholder: 'name contains', value: f.name, 'aria-label': 'name contains' }),
  h('button', { type: 'submit' }, 'Filter'),
  h('a', { href: '/', 'data-link': true, class: 'button-link' }, 'Clear'));

  replace(root, h('div', { class: 'page-head' }, h('h1', {}, 'Resources'), liveEl), countsEl, form, listEl);

  api.listKinds().then((kinds) => {
    const names = [...new Set(kinds.map((k) => k.kind))].sort();
    if (f.kind && !names.includes(f.kind)) names.unshift(f.kind);
    for (const n of names) kindSelect.append(h('option', { value: n, selected: n === f.kind }, n));
  }).catch(() => {
    if (f.kind) kindSelect.append(h('option', { value: f.kind, selected: true }, f.kind));
  });

  async function loadCounts() {
    try {
      const res = await api.countResources(base);
      const phases = res.phases || {};
      replace(countsEl, PHASES.map((p) => {
        const n = Number(phases[p] || 0);
        const on = f.phases.includes(p);
        return h('button', {
          type: 'button',
          class: `count phase-${p.toLowerCase()}${on ? ' selected' : ''}${n ? '' : ' zero'}`,
          'data-phase-count': p,
          'aria-pressed': on ? 'true' : 'false',
          title: on ? `stop filtering by ${p}` : `show only ${p}`,
          onclick: () => go({ ...f, phases: on ? f.phases.filter((x) => x !== p) : [...f.phases, p] }),
        }, h('span', { class: 'n' }, n), h('span', { class: 'label' }, p));
      }), h('span', { class: 'total' }, `${Number(res.total || 0)} total`));
    } catch (err) {
      replace(countsEl, errorBox(err));
    }
  }

  // Keyset pages: tokens[i] fetches page i.
  const tokens = [''];
  let page = 0;
  let rows = new Map();
  let stopWatch = () => {};
  let cursor = '';

  async function loadPage() {
    let res;
    try {
      res = await api.listResources({ ...base, phases: f.phases, page_size: PAGE_SIZE, page_token: tokens[page] });
    } catch (err) {
      replace(listEl, errorBox(err));
      return;
    }
    tokens[page + 1] = res.next_page_token || '';
    if (!cursor) {
      cursor = res.watch_cursor || '';
      startWatch();
    }
    const items = res.resources || [];
    rows = new Map();
    const body = h('tbody', {});
    for (const r of items) {
      const tr = row(r);
      rows.set(`${r.namespace}/${r.kind}/${r.name}`, tr);
      body.append(tr);
    }
    replace(listEl,
      items.length
        ? h('table', { class: 'resources' },
          h('thead', {}, h('tr', {}, ['Namespace', 'Kind', 'Name', 'Phase', 'Generation', 'Message', 'Updated'].map((c) => h('th', {}, c)))),
          body)
        : h('p', { class: 'empty' }, 'No resources match.'),
      h('div', { class: 'pager' },
        h('button', { type: 'button', disabled: page === 0, onclick: () => { page--; loadPage(); } }, '← Previous'),
        h('span', {}, `page ${page + 1}`),
        h('button', { type: 'button', disabled: !tokens[page + 1], onclick: () => { page++; loadPage(); } }, 'Next →')));
  }

  function row(r) {
    const msg = (r.failure && r.failure.message) || r.waiting || '';
    return h('tr', { 'data-ref': `${r.namespace}/${r.kind}/${r.name}` },
      h('td', {}, r.namespace),
      h('td', {}, `${r.kind} v${r.kind_version}`),
      h('td', {}, link(resourceHref(r), r.name)),
      h('td', { class: 'phase-cell' }, phaseBadge(r.phase)),
      h('td', { class: 'gen-cell' }, `${r.generation || 0} / ${r.synced_generation || 0}`),
      h('td', { class: 'msg' }, msg),
      h('td', { class: 'time' }, time(r.updated_at)));
  }

  const reloadPage = debounce(loadPage, 300);
  const reloadCounts = debounce(loadCounts, 300);

  function onChanges(changes) {
    let structural = false;
    for (const c of changes) {
      const tr = rows.get(`${c.namespace}/${c.kind}/${c.name}`);
      if (c.type === 'updated' && tr) {
        replace(tr.querySelector('.phase-cell'), phaseBadge(c.phase));
        replace(tr.querySelector('.gen-cell'), `${c.generation || 0} / ${c.synced_generation || 0}`);
        tr.classList.add('flash');
        setTimeout(() => tr.classList.remove('flash'), 800);
      }
      // A new or gone resource, or one that moved in or out of the phase
      // filter, changes which rows the page holds.
      if (c.type !== 'updated' || (f.phases.length && f.phases.includes(c.phase) !== !!tr)) structural = true;
    }
    reloadCounts();
    if (structural) reloadPage();
  }

  function startWatch() {
    stopWatch = api.watch({ namespace: f.namespace, kind: f.kind }, cursor, onChanges, (st) => {
      liveEl.textContent = st === 'live' ? '● live' : st === 'reconnecting' ? '○ reconnecting…' : `○ ${st}`;
      liveEl.classList.toggle('on', st === 'live');
    });
  }

  loadCounts();
  loadPage();
  return () => {
    stopWatch();
    reloadPage.cancel();
    reloadCounts.cancel();
  };
}
