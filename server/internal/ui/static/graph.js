// The dependency graph picture: the model from graphmodel.js laid out by
// layout.js and drawn as SVG, phases coloured, value flows on the edges,
// the path from the composite to each culprit highlighted.

import { s } from './dom.js';
import { layout } from './layout.js';
import { flowLabel, graphModel } from './graphmodel.js';

const NODE_W = 200;
const NODE_H = 50;

function clip(text, n) {
  return text.length > n ? `${text.slice(0, n - 1)}…` : text;
}

/** drawGraph returns an <svg> of resp; onOpen(ref) is called on a node click. */
export function drawGraph(resp, onOpen) {
  const m = graphModel(resp);
  const laid = layout(
    m.nodes.map((n) => ({ id: n.id, width: NODE_W, height: NODE_H })),
    m.edges.map((e) => ({ from: e.from, to: e.to, data: e })),
    { gapX: 36, gapY: 80 },
  );
  // Room on the right for the flow labels of the rightmost edges.
  const width = laid.width + (m.edges.some((e) => e.flows.length) ? 220 : 0);
  const svg = s('svg', {
    class: 'graph',
    width,
    height: laid.height,
    viewBox: `0 0 ${width} ${laid.height}`,
    role: 'img',
    'aria-label': 'dependency graph',
  });
  svg.append(
    s('defs', {},
      s('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' },
        s('path', { d: 'M 0 0 L 10 5 L 0 10 z', class: 'arrowhead' })),
      s('marker', { id: 'arrow-path', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' },
        s('path', { d: 'M 0 0 L 10 5 L 0 10 z', class: 'arrowhead on-path' }))),
  );
  // Edges first, so nodes are drawn over their ends.
  for (const e of laid.edges) {
    const d = e.data;
    const classes = ['edge', d.kind];
    if (d.onPath) classes.push('on-path');
    if (d.kind === 'dependency' && !d.satisfied) classes.push('waiting');
    const pts = e.points;
    const path = pts.map((p, i) => `${i ? 'L' : 'M'} ${p.x.toFixed(1)} ${p.y.toFixed(1)}`).join(' ');
    const label = flowLabel(d.flows);
    const g = s('g', { class: classes.join(' '), 'data-from': d.from, 'data-to': d.to },
      s('title', {}, `${d.kind === 'dependency' ? `${d.to} depends on ${d.from}` : `${d.from} owns ${d.to}`}${label ? `\n${label}` : ''}${d.kind === 'dependency' && !d.satisfied ? '\n(waiting: the dependency is not synced)' : ''}`),
      s('path', { d: path, 'marker-end': d.onPath ? 'url(#arrow-path)' : 'url(#arrow)' }));
    if (label) {
      const mid = pts[Math.floor((pts.length - 1) / 2)];
      const next = pts[Math.floor((pts.length - 1) / 2) + 1] || mid;
      g.append(s('text', { class: 'flow', x: (mid.x + next.x) / 2 + 4, y: (mid.y + next.y) / 2 }, clip(label, 48)));
    }
    svg.append(g);
  }
  for (const n of m.nodes) {
    const p = laid.nodes.get(n.id);
    const classes = ['node', `phase-${(n.phase || 'unknown').toLowerCase()}`];
    if (n.id === m.root) classes.push('root');
    if (n.external) classes.push('external');
    if (m.onPath.has(n.id)) classes.push('on-path');
    if (m.culprits.has(n.id)) classes.push('culprit');
    const r = n.resource;
    const g = s('g', {
      class: classes.join(' '),
      'data-ref': n.id,
      'data-phase': n.phase || '',
      transform: `translate(${p.x.toFixed(1)} ${p.y.toFixed(1)})`,
      tabindex: 0,
      onclick: () => onOpen && onOpen(r),
      onkeydown: (ev) => {
        if (ev.key === 'Enter' && onOpen) onOpen(r);
      },
    },
    s('title', {}, `${r.kind}/${r.name} (${n.phase})${n.message ? `\n${n.message}` : ''}${n.external ? '\n(outside this composite)' : ''}`),
    s('rect', { width: NODE_W, height: NODE_H, rx: 6 }),
    s('text', { class: 'kind', x: 10, y: 18 }, clip(`${r.kind} · ${n.phase || '?'}`, 30)),
    s('text', { class: 'name', x: 10, y: 38 }, clip(r.name, 28)));
    svg.append(g);
  }
  return svg;
}
