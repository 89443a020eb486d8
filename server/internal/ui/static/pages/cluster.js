// The cluster: live replicas, their shard tiles and connected workers.

import * as api from '../api.js';
import { errorBox, h, link, replace, time } from '../dom.js';

export function clusterPage(root) {
  const body = h('div', {}, 'Loading…');
  replace(root, h('div', { class: 'page-head' }, h('h1', {}, 'Cluster')), body);
  api.getCluster().then((c) => {
    const members = c.members || [];
    replace(body,
      h('p', {}, `${members.length} live replica(s); ${c.shards || 0} logical shards, tiled per kind version among the replicas whose workers serve it.`),
      members.map((m) => h('section', { class: 'member', 'data-member': m.id },
        h('h2', {}, m.id),
        h('dl', { class: 'facts' },
          h('dt', {}, 'Roles'), h('dd', {}, (m.roles || []).join(', ')),
          h('dt', {}, 'Host'), h('dd', {}, `${m.hostname || ''} (pid ${m.pid || '?'})`),
          h('dt', {}, 'Version'), h('dd', {}, m.version || ''),
          h('dt', {}, 'Started'), h('dd', {}, time(m.started_at)),
          h('dt', {}, 'Heartbeat'), h('dd', {}, time(m.heartbeat_at))),
        (m.served || []).length
          ? h('table', { class: 'served' },
            h('thead', {}, h('tr', {}, ['Kind', 'Reaction', 'Workers', 'Capacity', 'Shards', 'Not ready'].map((x) => h('th', {}, x)))),
            h('tbody', {}, m.served.map((s) => h('tr', {},
              h('td', {}, link(`/kinds/${encodeURIComponent(s.kind)}/${s.kind_version}`, `${s.kind} v${s.kind_version}`)),
              h('td', {}, s.reaction), h('td', {}, s.workers || 0), h('td', {}, s.capacity || 0),
              h('td', {}, shardBar(s.shard_lo || 0, s.shard_hi || 0, c.shards || 256)),
              h('td', { class: 'msg' }, s.not_ready || '')))))
          : h('p', { class: 'empty' }, 'No workers connected to this replica.'))));
  }).catch((err) => replace(body, errorBox(err)));
}

function shardBar(lo, hi, total) {
  const bar = h('span', { class: 'shardbar', title: `shards [${lo}, ${hi}) of ${total}` },
    h('span', { class: 'fill', 'data-lo': lo, 'data-hi': hi }));
  // Inline styles are refused by the content security policy: size the
  // fill through the CSSOM, which it allows.
  const fill = bar.firstChild;
  fill.style.marginLeft = `${(100 * lo) / total}%`;
  fill.style.width = `${(100 * (hi - lo)) / total}%`;
  return [bar, ` [${lo}, ${hi})`];
}
