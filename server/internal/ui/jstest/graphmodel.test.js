import { test } from 'node:test';
import assert from 'node:assert/strict';
import { flowLabel, graphModel, refId } from '../static/graphmodel.js';

const ref = (kind, name) => ({ namespace: 'default', kind, name });
const node = (kind, name, phase = 'Ready', external = false) => ({ resource: ref(kind, name), phase, external });

// A landing zone: acct ← vpc ← route, vpc-1 failed.
const zone = {
  nodes: [node('landingzone', 'z', 'Failed'), node('account', 'a'), node('vpc', 'v', 'Failed'), node('route', 'r', 'Reconciling')],
  edges: [
    { dependent: ref('vpc', 'v'), dependency: ref('account', 'a'), flows: [{ from: '/account_id', to: '/account_id' }], satisfied: true },
    { dependent: ref('route', 'r'), dependency: ref('vpc', 'v'), flows: [{ from: '/vpc_id', to: '/vpc_id' }], satisfied: false },
  ],
  culprits: [{ resource: ref('vpc', 'v'), phase: 'Failed', message: 'quota', path: [] }],
};

test('the culprit and the path from the root to it are marked', () => {
  const m = graphModel(zone);
  assert.equal(m.root, 'default/landingzone/z');
  assert.deepEqual([...m.culprits], ['default/vpc/v']);
  assert.deepEqual([...m.onPath].sort(), ['default/landingzone/z', 'default/vpc/v']);
  const onPath = m.edges.filter((e) => e.onPath);
  assert.deepEqual(onPath.map((e) => [e.from, e.to, e.kind]), [['default/landingzone/z', 'default/vpc/v', 'containment']]);
});

test('containment edges go only to children nothing holds up, plus the path', () => {
  const m = graphModel(zone);
  const contained = m.edges.filter((e) => e.kind === 'containment').map((e) => e.to).sort();
  assert.deepEqual(contained, ['default/account/a', 'default/vpc/v']);
  const deps = m.edges.filter((e) => e.kind === 'dependency');
  assert.deepEqual(deps.map((e) => [e.from, e.to, e.satisfied]), [
    ['default/account/a', 'default/vpc/v', true],
    ['default/vpc/v', 'default/route/r', false],
  ]);
});

test('a culprit below a child composite highlights the child', () => {
  const m = graphModel({
    nodes: [node('app', 'x', 'Degraded'), node('db', 'd', 'Degraded'), node('web', 'w')],
    edges: [],
    culprits: [{ resource: ref('disk', 'deep'), phase: 'Degraded', path: [ref('db', 'd')] }],
  });
  assert.deepEqual([...m.culprits], []);
  assert.deepEqual([...m.onPath].sort(), ['default/app/x', 'default/db/d']);
  assert.ok(m.edges.some((e) => e.from === 'default/app/x' && e.to === 'default/db/d' && e.onPath));
  assert.ok(m.edges.some((e) => e.to === 'default/web/w' && !e.onPath));
});

test('external nodes get no containment edge; a healthy graph has no path', () => {
  const m = graphModel({ nodes: [node('app', 'x'), node('net', 'shared', 'Ready', true)], edges: [], culprits: [] });
  assert.equal(m.edges.length, 0);
  assert.equal(m.onPath.size, 0);
  assert.deepEqual(graphModel({}).nodes, []);
});

test('flow labels name the status and spec paths, or the expression', () => {
  assert.equal(flowLabel([{ from: '/account_id', to: '/account_id' }]), 'status.account_id → spec.account_id');
  assert.equal(flowLabel([{ expr: 'status.ids[0]', to: '/net/id' }, { from: '/a~1b', to: '' }]), 'status.ids[0] → spec.net.id; status.a/b → spec');
  assert.equal(refId({ kind: 'k', name: 'n' }), 'default/k/n');
});
