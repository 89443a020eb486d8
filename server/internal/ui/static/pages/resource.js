// One resource: header and actions, culprits, dependency graph,
// conditions, spec and status, a planned spec change, events, spec history
// with rollback and the task timeline.

import * as api from '../api.js';
import { debounce, errorBox, h, link, phaseBadge, replace, time } from '../dom.js';
import { diffLines, pretty } from '../diff.js';
import { drawGraph } from '../graph.js';
import { refId } from '../graphmodel.js';
import { resourceHref } from './resources.js';
import { taskTimeline } from './tasks.js';
import { specEditor } from './plan.js';

export function resourcePage(root, { params, navigate, session }) {
  const ref = { namespace: params.namespace, kind: params.kind, name: params.name };
  const id = refId(ref);
  const head = h('div', { class: 'resource-head' });
  const actions = h('div', { class: 'actions' });
  const notice = h('div', { class: 'notice', role: 'status' });
  const culpritsEl = h('section', { class: 'culprits' });
  const graphEl = h('section', { class: 'graph-section' });
  const overview = h('section', { class: 'overview' });
  const eventsEl = h('section', { class: 'events' });
  const historyBody = h('div', { class: 'history' });
  const historyEl = h('details', { class: 'history-section', id: 'history', ontoggle: () => historyEl.open && loadHistory() },
    h('summary', {}, 'Spec history'), historyBody);
  const tasks = taskTimeline(ref);
  const liveEl = h('span', { class: 'live' }, 'connecting…');
  let current = null;
  let owner = '';
  const editor = specEditor({ get: () => current, canWrite: () => session.canWrite(owner, ref.namespace), onApplied: () => loadAll() });
  replace(root,
    h('div', { class: 'page-head' }, h('h1', {}, `${ref.kind}/${ref.name}`), liveEl),
    head, actions, notice, culpritsEl, graphEl, overview, editor, historyEl, tasks.el, eventsEl);

  let graphIds = new Set([id]);
  const reasonInput = h('input', { class: 'reason', placeholder: 'reason (recorded in events)', 'aria-label': 'reason' });

  const say = (text, isError) => {
    replace(notice, text ? h('div', { class: isError ? 'error' : 'ok' }, text) : null);
  };
  const reason = (fallback) => reasonInput.value.trim() || fallback;

  async function act(label, fn) {
    say('');
    try {
      const r = await fn();
      say(`${label}: done${r && r.generation ? ` (generation ${r.generation})` : ''}`);
      await loadAll();
    } catch (err) {
      say(`${label}: ${err.message}`, true);
    }
  }

  function renderActions(r) {
    const allowed = session.canWrite(owner, ref.namespace);
    const why = allowed ? undefined : 'your role does not allow writing resources of this kind';
    const quarantined = r.phase === 'Quarantined';
    replace(actions,
      h('button', { type: 'button', 'data-action': 'reconcile', disabled: !allowed, title: why || 'run the reconcile now at the current generation',
        onclick: () => act('reconcile', () => api.reconcile(ref, reason('reconcile from the web UI')).then((x) => x.resource)) }, 'Reconcile'),
      quarantined
        ? h('button', { type: 'button', 'data-action': 'unquarantine', disabled: !allowed, title: why,
          onclick: () => act('unquarantine', () => api.unquarantine(ref, reason('unquarantined from the web UI')).then((x) => x.resource)) }, 'Unquarantine')
        : h('button', { type: 'button', 'data-action': 'quarantine', disabled: !allowed, title: why || 'freeze: no work runs for it and its ancestors stop waiting for it',
          onclick: () => act('quarantine', () => api.quarantine(ref, reason('quarantined from the web UI')).then((x) => x.resource)) }, 'Quarantine'),
      reasonInput);
  }

  // managedText says what the resource is managed by: full (the engine
  // creates, updates and deletes its object) or observe (it only reads it),
  // and whether that is the resource's own policy or its kind's.
  function managedText(r) {
    const effective = r.effective_management_policy || 'full';
    const what = effective === 'observe' ? 'observe: only observed, never changed' : 'full';
    return r.management_policy ? what : `${what} (the kind's)`;
  }

  function renderHead(r) {
    const msg = (r.failure && r.failure.message) || r.waiting || '';
    const labels = Object.entries(r.labels || {});
    replace(head,
      h('dl', { class: 'facts' },
        h('dt', {}, 'Phase'), h('dd', { 'data-field': 'phase' }, phaseBadge(r.phase)),
        h('dt', {}, 'Kind'), h('dd', {}, link(`/kinds/${encodeURIComponent(r.kind)}/${r.kind_version}`, `${r.kind} v${r.kind_version}`)),
        h('dt', {}, 'Namespace'), h('dd', {}, r.namespace),
        h('dt', {}, 'Generation'), h('dd', { 'data-field': 'generation' }, `${r.generation} (synced ${r.synced_generation || 0})`),
        r.owner ? [h('dt', {}, 'Owner'), h('dd', {}, link(resourceHref(r.owner), `${r.owner.kind}/${r.owner.name}`))] : null,
        r.root && refId(r.root) !== id ? [h('dt', {}, 'Root'), h('dd', {}, link(resourceHref(r.root), `${r.root.kind}/${r.root.name}`))] : null,
        labels.length ? [h('dt', {}, 'Labels'), h('dd', {}, labels.map(([k, v]) => h('code', { class: 'label' }, `${k}=${v}`)))] : null,
        r.provider_config ? [h('dt', {}, 'Provider config'), h('dd', {}, r.provider_config)] : null,
        h('dt', {}, 'Managed'), h('dd', { 'data-field': 'management' }, managedText(r)),
        r.import && r.import.id ? [h('dt', {}, 'Import'), h('dd', { 'data-field': 'import' }, h('code', {}, r.import.id))] : null,
        h('dt', {}, 'Updated'), h('dd', {}, time(r.updated_at)),
        r.failure ? [h('dt', {}, 'Failure'), h('dd', { class: 'failure' },
          `${r.failure.terminal ? 'terminal' : 'transient'}, ${r.failure.attempts || 0} attempt(s): ${r.failure.message}`)] : null,
        !r.failure && msg ? [h('dt', {}, 'Waiting'), h('dd', {}, msg)] : null));
  }

  function renderCulprits(r) {
    const cs = (r.rollup && r.rollup.culprits) || [];
    if (!cs.length) {
      replace(culpritsEl);
      return;
    }
    replace(culpritsEl, h('h2', {}, 'Culprits'), h('ul', {}, cs.map((c) => h('li', { 'data-culprit': refId(c.resource) },
      phaseBadge(c.phase), ' ', link(resourceHref(c.resource), `${c.resource.kind}/${c.resource.name}`),
      c.message ? `: ${c.message}` : '',
      (c.path || []).length ? h('span', { class: 'path' }, ` via ${c.path.map((p) => `${p.kind}/${p.name}`).join(' → ')}`) : null))));
  }

  function renderOverview(r) {
    const conds = r.conditions || [];
    replace(overview,
      h('h2', {}, 'Conditions'),
      conds.length
        ? h('table', { class: 'conditions' },
          h('thead', {}, h('tr', {}, ['Type', 'Status', 'Reason', 'Message', 'Since'].map((c) => h('th', {}, c)))),
          h('tbody', {}, conds.map((c) => h('tr', {}, h('td', {}, c.type), h('td', {}, c.status), h('td', {}, c.reason || ''),
            h('td', { class: 'msg' }, c.message || ''), h('td', { class: 'time' }, time(c.last_transition_time))))))
        : h('p', { class: 'empty' }, 'No conditions.'),
      h('div', { class: 'docs' },
        h('div', {}, h('h2', {}, 'Spec'), h('pre', { class: 'json', 'data-field': 'spec' }, pretty(r.spec || {}))),
        h('div', {}, h('h2', {}, 'Status'), h('pre', { class: 'json' }, pretty(r.status || {})))));
  }

  async function loadGraph() {
    try {
      const g = await api.getGraph(ref);
      graphIds = new Set((g.nodes || []).map((n) => refId(n.resource)));
      if ((g.nodes || []).length <= 1) {
        replace(graphEl);
        return;
      }
      replace(graphEl, h('h2', {}, 'Dependency graph'),
        h('p', { class: 'legend' }, 'Arrows run from a dependency to what depends on it, labelled with the values that flow; dashed: still waiting. The path from this composite to each culprit is outlined in red.',
          g.more_nodes ? ` ${g.more_nodes} more nodes are not shown.` : ''),
        h('div', { class: 'graph-scroll' }, drawGraph(g, (r) => navigate(resourceHref(r)))));
    } catch (err) {
      replace(graphEl, errorBox(err));
    }
  }

  async function loadEvents() {
    try {
      const res = await api.listEvents(ref);
      const evs = res.events || [];
      replace(eventsEl, h('h2', {}, 'Events'), evs.length
        ? h('table', { class: 'events' },
          h('thead', {}, h('tr', {}, ['Time', 'Type', 'Reason', 'Message', 'Actor', 'Gen'].map((c) => h('th', {}, c)))),
          h('tbody', {}, evs.map((e) => h('tr', {}, h('td', { class: 'time' }, time(e.time)), h('td', {}, e.type || ''), h('td', {}, e.reason || ''),
            h('td', { class: 'msg' }, e.message || ''), h('td', {}, e.actor || ''), h('td', {}, e.generation || '')))))
        : h('p', { class: 'empty' }, 'No events.'));
    } catch (err) {
      replace(eventsEl, h('h2', {}, 'Events'), errorBox(err));
    }
  }

  async function loadHistory() {
    let res;
    try {
      res = await api.getHistory(ref, { page_size: 50 });
    } catch (err) {
      replace(historyBody, errorBox(err));
      return;
    }
    const revs = res.revisions || [];
    const allowed = session.canWrite(owner, ref.namespace);
    const currentGen = current ? Number(current.generation) : 0;
    replace(historyBody,
      h('p', { class: 'legend' }, `Newest first; the last ${res.keep || revs.length} revisions are kept. Each diff is against the revision before it.`),
      revs.map((rev, i) => {
        const older = revs[i + 1];
        const lines = older ? diffLines(pretty(older.spec || {}), pretty(rev.spec || {})) : null;
        const gen = Number(rev.generation);
        return h('div', { class: 'revision', 'data-generation': gen },
          h('div', { class: 'rev-head' },
            h('strong', {}, `generation ${gen}`), gen === currentGen ? h('span', { class: 'tag' }, 'current') : null,
            ` · v${rev.kind_version} · ${rev.source || ''} · ${rev.actor || ''} · ${time(rev.time)}`,
            gen !== currentGen
              ? h('button', { type: 'button', class: 'rollback', 'data-rollback': gen, disabled: !allowed,
                title: allowed ? `apply generation ${gen}'s spec again, as a new generation` : 'your role does not allow writing resources of this kind',
                onclick: () => {
                  if (!window.confirm(`Roll ${ref.kind}/${ref.name} back to generation ${gen}'s spec?`)) return;
                  act(`rollback to generation ${gen}`, () => api.rollback(ref, gen, reason(`rollback to generation ${gen} from the web UI`)).then((x) => x.resource));
                } }, 'Roll back to this')
              : null),
          lines
            ? h('pre', { class: 'diff' }, lines.map((l) => h('span', { class: l.op === '+' ? 'add' : l.op === '-' ? 'del' : 'same' }, `${l.op} ${l.text}\n`)))
            : h('pre', { class: 'json' }, pretty(rev.spec || {})));
      }),
      res.next_page_token ? h('p', { class: 'legend' }, 'Older revisions are not shown.') : null);
  }

  async function loadAll() {
    try {
      current = await api.getResource(ref);
    } catch (err) {
      replace(head, errorBox(err));
      replace(actions);
      return;
    }
    try {
      const k = await api.getKind(current.kind, current.kind_version);
      owner = (k && k.owner) || '';
    } catch {
      owner = '';
    }
    renderHead(current);
    renderActions(current);
    renderCulprits(current);
    renderOverview(current);
    await Promise.all([loadGraph(), loadEvents(), historyEl.open ? loadHistory() : null,
      tasks.el.open ? tasks.load() : null]);
  }

  const reload = debounce(loadAll, 300);
  let stopWatch = () => {};
  let stopped = false;
  // Take the watch's resume point before the first read, so no change
  // between the read and the stream's start is missed.
  api.listResources({ namespace: ref.namespace, page_size: 1 }).catch(() => ({})).then(async (l) => {
    await loadAll();
    if (stopped) return;
    stopWatch = api.watch({ namespace: ref.namespace }, l.watch_cursor || '', (changes) => {
      if (changes.some((c) => graphIds.has(`${c.namespace}/${c.kind}/${c.name}`) || `${c.namespace}/${c.kind}/${c.name}` === id)) reload();
    }, (st) => {
      liveEl.textContent = st === 'live' ? '● live' : st === 'reconnecting' ? '○ reconnecting…' : `○ ${st}`;
      liveEl.classList.toggle('on', st === 'live');
    });
  });
  return () => {
    stopped = true;
    stopWatch();
    reload.cancel();
  };
}
