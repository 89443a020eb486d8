import { test } from 'node:test';
import assert from 'node:assert/strict';
import { crossings, layout } from '../static/layout.js';

const box = (id) => ({ id, width: 100, height: 40 });

test('longest-path layers put each node below all it depends on', () => {
  const g = layout([box('a'), box('b'), box('c')], [{ from: 'a', to: 'b' }, { from: 'b', to: 'c' }, { from: 'a', to: 'c' }]);
  const [a, b, c] = ['a', 'b', 'c'].map((id) => g.nodes.get(id));
  assert.deepEqual([a.layer, b.layer, c.layer], [0, 1, 2]);
  assert.ok(a.y < b.y && b.y < c.y);
  // a→c spans two layers: it is routed through one dummy point.
  const long = g.edges.find((e) => e.from === 'a' && e.to === 'c');
  assert.equal(long.points.length, 3);
  assert.equal(long.points[0].y, a.y + a.height);
  assert.equal(long.points[2].y, c.y);
  assert.deepEqual(g.skipped, []);
});

test('nodes in a layer do not overlap and keep the gap', () => {
  const nodes = [box('r'), ...'abcdef'.split('').map(box)];
  const edges = 'abcdef'.split('').map((id) => ({ from: 'r', to: id }));
  const g = layout(nodes, edges, { gapX: 30 });
  const row = 'abcdef'.split('').map((id) => g.nodes.get(id)).sort((p, q) => p.x - q.x);
  for (let i = 1; i < row.length; i++) assert.ok(row[i].x >= row[i - 1].x + 100 + 30 - 1e-9, `overlap at ${i}`);
  // The parent sits over the middle of its children.
  const r = g.nodes.get('r');
  const mid = (row[0].x + row[row.length - 1].x + 100) / 2;
  assert.ok(Math.abs(r.x + 50 - mid) < 1, `parent centre ${r.x + 50}, children centre ${mid}`);
  assert.ok(g.width >= 6 * 100 + 5 * 30);
});

test('barycentre ordering removes avoidable crossings', () => {
  // Input order crosses both pairs: a→y, b→x and x→q, y→p.
  const nodes = ['a', 'b', 'x', 'y', 'p', 'q'].map(box);
  const edges = [{ from: 'a', to: 'y' }, { from: 'b', to: 'x' }, { from: 'x', to: 'q' }, { from: 'y', to: 'p' }];
  const g = layout(nodes, edges);
  const order = (ids) => ids.slice().sort((m, n) => g.nodes.get(m).x - g.nodes.get(n).x);
  const layers = [order(['a', 'b']), order(['x', 'y']), order(['p', 'q'])];
  const down = new Map([['a', ['y']], ['b', ['x']], ['x', ['q']], ['y', ['p']]]);
  assert.equal(crossings(layers, down), 0, `layers ${JSON.stringify(layers)}`);
});

test('cycles, self-loops, duplicates and unknown nodes are skipped, not fatal', () => {
  const g = layout([box('a'), box('b')], [
    { from: 'a', to: 'b' }, { from: 'b', to: 'a' }, { from: 'a', to: 'a' }, { from: 'a', to: 'zz' }, { from: 'a', to: 'b' },
  ]);
  assert.equal(g.edges.length, 1);
  assert.equal(g.skipped.length, 4);
  assert.ok(g.nodes.get('a').y < g.nodes.get('b').y);
});

test('an empty graph lays out', () => {
  const g = layout([], []);
  assert.equal(g.nodes.size, 0);
  assert.equal(g.edges.length, 0);
});
