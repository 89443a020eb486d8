// Change a resource's spec safely: edit it, plan the change (a dry run,
// and the children each composite's composer would now make), then apply
// exactly that plan: the apply carries the plan's id, so the server
// refuses it if anything the plan read changed in between.

import * as api from '../api.js';
import { errorBox, h, replace } from '../dom.js';
import { diffLines, pretty } from '../diff.js';

const marks = { create: '+', update: '~', prune: '-', orphan: '-', unchanged: ' ' };

function diffPre(before, after) {
  // An absent side (a create, a prune) is empty, not the JSON null.
  const lines = diffLines(before == null ? '' : pretty(before), after == null ? '' : pretty(after));
  return h('pre', { class: 'diff' }, lines.map((l) => h('span', { class: l.op === '+' ? 'add' : l.op === '-' ? 'del' : 'same' }, `${l.op} ${l.text}\n`)));
}

const refText = (r) => `${r.kind}/${r.name}`;

/** renderPlan shows a PlanChange answer: the dry run, each composite's children, the totals. */
export function renderPlan(plan) {
  const t = plan.totals || {};
  const dry = ((plan.resources || {}).dry_run || {}).resources || [];
  return h('div', { class: 'plan' },
    dry.map((c) => h('div', { class: 'plan-resource', 'data-plan-resource': refText(c.resource) },
      h('strong', {}, refText(c.resource)),
      ` ${c.before ? (c.generation_bumps ? `generation ${c.before.generation} → ${c.after.generation}` : 'unchanged') : 'created'}`,
      c.generation_bumps ? diffPre((c.before || {}).spec, (c.after || {}).spec) : null)),
    (plan.composites || []).map((cp) => h('div', { class: 'plan-composite', 'data-plan-composite': refText(cp.composite) },
      h('h4', {}, `composite ${refText(cp.composite)}`, cp.composer ? h('span', { class: 'legend' }, ` composed by ${cp.composer}`) : null),
      cp.not_previewed
        ? h('p', { class: 'warn' }, `children not previewed: ${cp.not_previewed}`)
        : h('ul', { class: 'plan-children' }, (cp.children || []).map((c) => h('li', { 'data-child': `${c.kind}/${c.name}`, 'data-action': c.action },
          h('code', {}, `${marks[c.action] || '?'} ${c.action}`), ` ${c.kind}/${c.name}`,
          c.waiting ? h('span', { class: 'legend' }, ` (waits: ${c.waiting})`) : null,
          c.action === 'update' || c.action === 'create' ? diffPre(c.spec_before, c.spec_after) : null))),
      (cp.edges_added || []).map((e) => h('p', { class: 'edge' }, `+ edge ${refText(e.dependent)} → ${refText(e.dependency)}`)),
      (cp.edges_removed || []).map((e) => h('p', { class: 'edge' }, `- edge ${refText(e.dependent)} → ${refText(e.dependency)}`)))),
    h('p', { class: 'plan-totals', 'data-field': 'plan-totals' },
      `Plan: ${t.create || 0} to create, ${t.update || 0} to update, ${t.prune || 0} to prune, ${t.orphan || 0} to orphan, ` +
      `${t.unchanged || 0} unchanged, across ${t.composites || 0} composite(s)` +
      (t.not_previewed ? `; ${t.not_previewed} not previewed` : '') + '. Nothing was changed.'));
}

/**
 * specEditor is the "Change the spec" panel of a resource page. get
 * returns the resource as last read; onApplied runs after an apply.
 */
export function specEditor({ get, canWrite, onApplied }) {
  const text = h('textarea', { class: 'spec-edit', rows: 12, spellcheck: 'false', 'aria-label': 'spec (JSON)' });
  const out = h('div', { class: 'plan-out', 'aria-live': 'polite' });
  const applyBtn = h('button', { type: 'button', 'data-action': 'apply-plan', disabled: true }, 'Apply this plan');
  let planned = null; // {id, request}

  const request = () => {
    const r = get();
    let spec;
    try {
      spec = JSON.parse(text.value);
    } catch (err) {
      throw new Error(`the spec is not JSON: ${err.message}`);
    }
    if (!spec || typeof spec !== 'object' || Array.isArray(spec)) throw new Error('the spec must be a JSON object');
    return { namespace: r.namespace, kind: r.kind, kind_version: r.kind_version, name: r.name, labels: r.labels || {}, spec };
  };

  async function plan() {
    planned = null;
    applyBtn.disabled = true;
    replace(out, 'Planning…');
    try {
      const req = request();
      const res = await api.planChange({ resources: [req] });
      planned = { id: res.plan_id, request: req };
      replace(out, renderPlan(res));
      applyBtn.disabled = !canWrite();
    } catch (err) {
      replace(out, errorBox(err));
    }
  }

  async function apply() {
    if (!planned) return;
    applyBtn.disabled = true;
    try {
      const res = await api.applyResource({ ...planned.request, plan_id: planned.id });
      replace(out, h('div', { class: 'ok' }, `applied: ${res.result || 'done'} (generation ${(res.resource || {}).generation})`));
      planned = null;
      onApplied();
    } catch (err) {
      replace(out, errorBox(err));
    }
  }

  const el = h('details', {
    class: 'spec-editor', id: 'change-spec',
    ontoggle: () => {
      if (el.open && !text.value) text.value = pretty(get().spec || {});
    },
  },
  h('summary', {}, 'Change the spec'),
  h('p', { class: 'legend' }, 'Plan shows what the change would do, down to the children composers would make; nothing changes until you apply. ' +
    'The apply is refused if anything the plan read has changed since.'),
  text,
  h('div', { class: 'actions' },
    h('button', { type: 'button', 'data-action': 'plan', onclick: plan }, 'Plan'),
    applyBtn),
  out);
  applyBtn.onclick = apply;
  text.oninput = () => {
    planned = null;
    applyBtn.disabled = true;
  };
  return el;
}
