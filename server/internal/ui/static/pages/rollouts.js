// A kind version's staged rollouts: each rollout's state, its waves and
// their results, its failures, and the actions a kind owner may take on it
// (pause, resume, abort, roll back).

import * as api from '../api.js';
import { errorBox, h, replace, time } from '../dom.js';

const stateClass = {
  running: 'reconciling', paused: 'orphaned', completed: 'ready', failed: 'failed', aborted: 'quarantined', rolled_back: 'deleting',
  pending: 'unknown', moving: 'reconciling', done: 'ready',
};

const badge = (state) => h('span', { class: `badge phase-${stateClass[state] || 'unknown'}` }, state || '?');

function countsText(c) {
  c = c || {};
  const parts = [`${c.ready || 0}/${c.total || 0} ready`];
  for (const k of ['moving', 'pending', 'failed', 'skipped', 'rolled_back']) {
    if (c[k]) parts.push(`${c[k]} ${k.replace('_', ' ')}`);
  }
  return parts.join(', ');
}

// The actions a rollout in a state takes.
const actionsFor = {
  running: ['pause', 'abort', 'rollback'],
  paused: ['resume', 'abort', 'rollback'],
  failed: ['resume', 'abort', 'rollback'],
  completed: ['rollback'],
  aborted: ['rollback'],
};

const calls = { pause: api.pauseRollout, resume: api.resumeRollout, abort: api.abortRollout, rollback: api.rollbackRollout };

function rolloutEl(r, canAct, reload) {
  const notice = h('div', { class: 'notice', role: 'status' });
  const act = async (what) => {
    if (what === 'rollback' && !window.confirm(`Move every resource rollout ${r.id} moved back to v${r.from_version}?`)) return;
    try {
      await calls[what](r.id, `${what} from the web UI`);
      reload();
    } catch (err) {
      replace(notice, errorBox(err));
    }
  };
  const why = canAct ? undefined : 'your role does not allow changing rollouts of this kind';
  return h('div', { class: 'rollout', 'data-rollout': r.id, 'data-state': r.state },
    h('div', { class: 'rev-head' },
      h('strong', {}, `rollout ${r.id}`), ' ', badge(r.state),
      ` v${r.from_version} → v${r.to_version}${r.namespace ? ` in ${r.namespace}` : ''} · ${countsText(r.counts)} · by ${r.actor || '?'} · ${time(r.created_at)}`,
      r.reason ? h('span', { class: 'msg' }, ` · ${r.reason}`) : null),
    h('div', { class: 'actions' }, (actionsFor[r.state] || []).map((a) => h('button', {
      type: 'button', 'data-rollout-action': a, disabled: !canAct, title: why, onclick: () => act(a),
    }, a === 'rollback' ? 'Roll back' : a[0].toUpperCase() + a.slice(1)))),
    notice,
    h('table', { class: 'waves' },
      h('thead', {}, h('tr', {}, ['Wave', 'Takes', 'State', 'Members', 'Started', 'Finished'].map((c) => h('th', {}, c)))),
      h('tbody', {}, (r.waves || []).map((w) => h('tr', { 'data-wave': w.index, 'data-state': w.state, class: w.index === r.current_wave ? 'current' : '' },
        h('td', {}, String(w.index)), h('td', {}, w.selector || ''), h('td', {}, badge(w.state)), h('td', {}, countsText(w.counts)),
        h('td', { class: 'time' }, w.started_at ? time(w.started_at) : w.not_before ? `not before ${time(w.not_before)}` : ''),
        h('td', { class: 'time' }, w.finished_at ? time(w.finished_at) : ''))))),
    (r.failures || []).length
      ? h('details', { class: 'failures' }, h('summary', {}, `${r.failures.length} failure(s)`),
        h('ul', {}, r.failures.map((f) => h('li', {}, `wave ${f.wave}: ${f.resource.kind}/${f.resource.name}: `, h('span', { class: 'msg' }, f.reason)))))
      : null);
}

/** rolloutsSection lists the rollouts that move resources from or to a kind version. */
export function rolloutsSection({ kind, version, canAct }) {
  const body = h('div', {}, 'Loading…');
  const el = h('section', { class: 'rollouts' }, h('h2', {}, 'Rollouts'), body);
  async function load() {
    try {
      const list = (await api.listRollouts(kind)).filter((r) => r.from_version === version || r.to_version === version);
      // The list leaves failures out; a rollout's own read has them.
      const full = await Promise.all(list.map((r) => api.getRollout(r.id).catch(() => r)));
      replace(body, full.length
        ? full.map((r) => rolloutEl(r, canAct(), load))
        : h('p', { class: 'empty' }, `No rollouts. conctl rollout start ${kind} --to-version N moves resources between versions in waves.`));
    } catch (err) {
      replace(body, errorBox(err));
    }
  }
  load();
  return el;
}
