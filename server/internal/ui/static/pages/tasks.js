// A resource's task timeline: its last task records, newest first, each
// a bar of its wait (claim to dispatch) and run (dispatch to end), its
// outcome and error; clicking one shows its input and result.

import * as api from '../api.js';
import { errorBox, h, replace, time } from '../dom.js';
import { pretty } from '../diff.js';

const ms = (a, b) => (a && b ? Math.max(0, new Date(b) - new Date(a)) : 0);
const fmt = (n) => (n < 1000 ? `${n} ms` : `${(n / 1000).toFixed(1)} s`);

// widthOf sets el's width to a fraction of its bar through the CSSOM: the
// UI's content security policy refuses style attributes.
function widthOf(el, fraction) {
  el.style.width = `${(100 * fraction).toFixed(1)}%`;
  return el;
}

/** taskTimeline returns the section and its loader. */
export function taskTimeline(ref) {
  const body = h('div', { class: 'tasks' });
  const el = h('details', { class: 'history-section', id: 'tasks', ontoggle: () => el.open && load() },
    h('summary', {}, 'Task timeline'), body);
  // The records opened by a click stay open when the timeline is drawn
  // again (the page reloads it on every change of the resource).
  const opened = new Set();

  async function load() {
    let res;
    try {
      res = await api.listTaskRecords(ref, { page_size: 50 });
    } catch (err) {
      replace(body, errorBox(err));
      return;
    }
    const recs = res.records || [];
    const longest = Math.max(1, ...recs.map((r) => ms(r.claimed_at, r.ended_at)));
    replace(body,
      h('p', { class: 'legend' }, recs.length
        ? 'Newest first. Each bar: waiting for dispatch (light), then running at the worker. Click one for what it was sent and returned.'
        : 'No task records (the server may keep none: converge serve --task-records).'),
      recs.map((r) => {
        const wait = ms(r.claimed_at, r.dispatched_at || r.ended_at), run = ms(r.dispatched_at, r.ended_at);
        const detail = h('div', { class: 'task-detail' });
        if (opened.has(r.id)) fill(r.id, detail);
        const err = r.failed ? `${r.terminal ? 'terminal ' : ''}${r.error_reason ? r.error_reason + ': ' : ''}${r.error || ''}` : '';
        return h('div', { class: `task-record outcome-${r.outcome}${r.failed ? ' failed' : ''}`, 'data-id': r.id, 'data-outcome': r.outcome },
          h('div', { class: 'rev-head', onclick: () => toggle(r.id, detail) },
            h('strong', {}, `#${r.id}`), ` ${r.trigger} · generation ${r.generation} · attempt ${r.attempt} · ${r.worker || '-'} · ${time(r.ended_at)}`,
            h('span', { class: 'bar', title: `wait ${fmt(wait)}, run ${fmt(run)}` },
              widthOf(h('span', { class: 'wait' }), wait / longest), widthOf(h('span', { class: 'run' }), run / longest)),
            h('span', { class: 'tag' }, r.outcome), r.discard_reason ? ` ${r.discard_reason}` : null),
          err ? h('div', { class: 'error' }, err) : null,
          detail);
      }));
  }

  function toggle(id, detail) {
    if (opened.delete(id)) {
      replace(detail);
      return;
    }
    opened.add(id);
    fill(id, detail);
  }

  async function fill(id, detail) {
    try {
      const { record } = await api.getTaskRecord(id);
      replace(detail, h('div', { class: 'docs' },
        h('div', {}, h('h4', {}, 'Input'), h('pre', { class: 'json' }, pretty(record.input || {}))),
        h('div', {}, h('h4', {}, 'Result'), h('pre', { class: 'json' }, pretty(record.result || {})))));
    } catch (err) {
      replace(detail, errorBox(err));
    }
  }
  return { el, load };
}
