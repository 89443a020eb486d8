// Kinds: every kind version, and one version in full: schemas rendered as
// tables, reactions, policy, rollouts, provider configs and the workers
// serving it.

import * as api from '../api.js';
import { errorBox, h, link, replace, time } from '../dom.js';
import { pretty } from '../diff.js';
import { schemaRows } from '../schema.js';
import { rolloutsSection } from './rollouts.js';

const kindHref = (k, v) => `/kinds/${encodeURIComponent(k)}/${v}`;

/** servedBy groups the cluster's served reactions by "kind/version". */
function servedBy(cluster) {
  const out = new Map();
  for (const m of cluster.members || []) {
    for (const s of m.served || []) {
      const key = `${s.kind}/${s.kind_version}`;
      if (!out.has(key)) out.set(key, []);
      out.get(key).push({ member: m, ...s });
    }
  }
  return out;
}

export function kindsPage(root) {
  const body = h('div', {}, 'Loading…');
  replace(root, h('div', { class: 'page-head' }, h('h1', {}, 'Kinds')), body);
  Promise.all([api.listKinds(), api.getCluster().catch(() => ({}))]).then(([kinds, cluster]) => {
    const served = servedBy(cluster);
    kinds.sort((a, b) => a.kind.localeCompare(b.kind) || a.kind_version - b.kind_version);
    replace(body, kinds.length
      ? h('table', { class: 'kinds' },
        h('thead', {}, h('tr', {}, ['Kind', 'Version', 'Owner', 'Reactions', 'Workers', 'Description'].map((c) => h('th', {}, c)))),
        h('tbody', {}, kinds.map((k) => {
          const ws = served.get(`${k.kind}/${k.kind_version}`) || [];
          const ready = ws.reduce((n, s) => n + (s.workers || 0), 0);
          return h('tr', { 'data-kind': `${k.kind}/${k.kind_version}` },
            h('td', {}, link(kindHref(k.kind, k.kind_version), k.kind)),
            h('td', {}, `v${k.kind_version}${k.policy && k.policy.retired ? ' (retired)' : ''}`),
            h('td', {}, k.owner || ''),
            h('td', {}, (k.reactions || []).map((r) => r.name).join(', ')),
            h('td', { class: ready ? '' : 'warn' }, ready ? `${ready} ready` : 'none'),
            h('td', { class: 'msg' }, k.description || ''));
        })))
      : h('p', { class: 'empty' }, 'No kinds registered. Apply a manifest with conctl apply -f.'));
  }).catch((err) => replace(body, errorBox(err)));
}

function schemaTable(title, schema) {
  if (!schema || !Object.keys(schema).length) return [h('h3', {}, title), h('p', { class: 'empty' }, 'None.')];
  const rows = schemaRows(schema);
  return [
    h('h3', {}, title),
    rows.length
      ? h('table', { class: 'schema' },
        h('thead', {}, h('tr', {}, ['Field', 'Type', 'Required', 'Constraints', 'Description'].map((c) => h('th', {}, c)))),
        h('tbody', {}, rows.map((r) => h('tr', {}, h('td', {}, h('code', {}, r.path)), h('td', {}, r.type),
          h('td', {}, r.required ? 'yes' : ''), h('td', { class: 'msg' }, r.constraints), h('td', { class: 'msg' }, r.description)))))
      : h('p', { class: 'empty' }, 'No properties.'),
    h('details', {}, h('summary', {}, 'as JSON'), h('pre', { class: 'json' }, pretty(schema))),
  ];
}

export function kindPage(root, { params, session }) {
  const body = h('div', {}, 'Loading…');
  replace(root, h('div', { class: 'page-head' }, h('h1', {}, `${params.kind} v${params.version}`)), body);
  Promise.all([
    api.getKind(params.kind, params.version),
    api.listKinds().catch(() => []),
    api.listConfigs(params.kind, params.version).catch((err) => err),
    api.getCluster().catch(() => ({})),
  ]).then(([k, all, configs, cluster]) => {
    const versions = all.filter((x) => x.kind === params.kind).map((x) => x.kind_version).sort((a, b) => a - b);
    const ws = servedBy(cluster).get(`${params.kind}/${params.version}`) || [];
    const p = k.policy || {};
    replace(body,
      h('p', {}, k.description || ''),
      h('dl', { class: 'facts' },
        h('dt', {}, 'Versions'), h('dd', {}, versions.map((v) => [v === params.version ? h('strong', {}, `v${v}`) : link(kindHref(params.kind, v), `v${v}`), ' '])),
        h('dt', {}, 'Owner team'), h('dd', {}, k.owner || '(admins)'),
        h('dt', {}, 'Revision'), h('dd', {}, `${k.revision || ''} · updated ${time(k.updated_at)}`),
        k.finalizer ? [h('dt', {}, 'Finalizer'), h('dd', {}, k.finalizer)] : null,
        h('dt', {}, 'Allowed workers'), h('dd', {}, (k.workers || []).length ? k.workers.join(', ') : 'any'),
        h('dt', {}, 'Resources'), h('dd', {}, link(`/?kind=${encodeURIComponent(params.kind)}`, 'list'))),
      h('h2', {}, 'Reactions'),
      h('table', { class: 'reactions' },
        h('thead', {}, h('tr', {}, ['Name', 'Trigger', 'Emits', 'Verb'].map((c) => h('th', {}, c)))),
        h('tbody', {}, (k.reactions || []).map((r) => h('tr', {}, h('td', {}, r.name), h('td', {}, r.trigger),
          h('td', {}, (r.emits || []).join(', ')), h('td', {}, r.verb || ''))))),
      h('h2', {}, 'Policy'),
      h('dl', { class: 'facts' }, [
        ['max_inflight', p.max_inflight || 'unlimited'],
        ['task_deadline_seconds', p.task_deadline_seconds || 'default'],
        ['resync_interval_seconds', p.resync_interval_seconds || 'off'],
        ['resync_recomposes', p.resync_recomposes ? 'yes' : 'no'],
        ['orphan_grace_seconds', p.orphan_grace_seconds || 'default'],
        ['max_transient_attempts', p.max_transient_attempts || 'default'],
        ['deletion_policy', p.deletion_policy || 'delete'],
        ['management_policy', p.management_policy || 'full'],
        ['retired', p.retired ? 'yes' : 'no'],
      ].map(([kk, v]) => [h('dt', {}, kk), h('dd', {}, String(v))])),
      rolloutsSection({ kind: params.kind, version: params.version, canAct: () => session.canOwn(k.owner) }),
      h('h2', {}, 'Schemas'),
      schemaTable('Spec', k.spec_schema),
      schemaTable('Status', k.status_schema),
      schemaTable('Provider config', k.config_schema),
      (k.operations || []).length ? [h('h2', {}, 'Operations'), (k.operations || []).map((o) => [
        h('h3', {}, o.verb), h('p', {}, o.description || ''), schemaTable('Input', o.input_schema)])] : null,
      h('h2', {}, 'Provider configs'),
      configs instanceof Error
        ? errorBox(configs)
        : configs.length
          ? h('table', { class: 'configs' },
            h('thead', {}, h('tr', {}, ['Name', 'Description', 'Config', 'Updated'].map((c) => h('th', {}, c)))),
            h('tbody', {}, configs.map((c) => h('tr', {}, h('td', {}, c.name || 'default'), h('td', {}, c.description || ''),
              h('td', {}, h('pre', { class: 'json' }, pretty(c.config || {}))), h('td', { class: 'time' }, time(c.updated_at))))))
          : h('p', { class: 'empty' }, 'None.'),
      h('h2', {}, 'Served by'),
      ws.length
        ? h('table', { class: 'served' },
          h('thead', {}, h('tr', {}, ['Replica', 'Reaction', 'Workers', 'Capacity', 'Shards', 'Not ready'].map((c) => h('th', {}, c)))),
          h('tbody', {}, ws.map((s) => h('tr', {}, h('td', {}, s.member.id), h('td', {}, s.reaction), h('td', {}, s.workers || 0),
            h('td', {}, s.capacity || 0), h('td', {}, `[${s.shard_lo || 0}, ${s.shard_hi || 0})`), h('td', { class: 'msg' }, s.not_ready || '')))))
        : h('p', { class: 'warn' }, 'No connected worker serves this kind version: its work is parked until one connects.'));
  }).catch((err) => replace(body, errorBox(err)));
}
