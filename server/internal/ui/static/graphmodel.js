// What the dependency graph picture shows, derived from a
// GetResourceGraph answer: which nodes and edges to lay out and which lie
// on the path from the composite to a culprit. Pure, so it is tested
// without a browser.

/** refId names a resource reference as namespace/kind/name. */
export function refId(ref) {
  return `${ref.namespace || 'default'}/${ref.kind}/${ref.name}`;
}

/**
 * graphModel returns {root, nodes, edges, culprits, onPath} where nodes
 * are the API's nodes with an id, edges are {from, to, kind: 'dependency'
 * | 'containment', flows, satisfied, onPath} drawn from upper to lower
 * (a dependency above its dependents, the composite above its children),
 * culprits is the set of culprit ids shown, and onPath the set of node ids
 * on a root-to-culprit path.
 *
 * Containment edges are drawn only to children nothing else in the graph
 * holds up, and along culprit paths: every child is the composite's, so
 * an edge to each would bury the dependency edges.
 */
export function graphModel(resp) {
  const apiNodes = resp.nodes || [];
  if (!apiNodes.length) return { root: null, nodes: [], edges: [], culprits: new Set(), onPath: new Set() };
  const nodes = apiNodes.map((n) => ({ ...n, id: refId(n.resource) }));
  const ids = new Set(nodes.map((n) => n.id));
  const root = nodes[0].id;

  const edges = [];
  const held = new Set(); // children some in-graph dependency holds up
  for (const e of resp.edges || []) {
    const from = refId(e.dependency);
    const to = refId(e.dependent);
    if (!ids.has(from) || !ids.has(to)) continue;
    held.add(to);
    edges.push({ from, to, kind: 'dependency', flows: e.flows || [], satisfied: !!e.satisfied, onPath: false });
  }

  const culprits = new Set();
  const onPath = new Set();
  const pathPairs = new Set();
  for (const c of resp.culprits || []) {
    // The path names the composites between the root and the culprit.
    const chain = [root, ...(c.path || []).map(refId), refId(c.resource)].filter((id, i, a) => i === 0 || id !== a[i - 1]);
    const shown = chain.filter((id) => ids.has(id));
    if (ids.has(refId(c.resource))) culprits.add(refId(c.resource));
    shown.forEach((id) => onPath.add(id));
    for (let i = 1; i < shown.length; i++) pathPairs.add(`${shown[i - 1]}\u0000${shown[i]}`);
  }
  if (culprits.size === 0 && onPath.size === 1) onPath.clear();

  for (const n of nodes.slice(1)) {
    const pair = `${root}\u0000${n.id}`;
    if (n.external) continue;
    if (!held.has(n.id) || pathPairs.has(pair)) {
      edges.push({ from: root, to: n.id, kind: 'containment', flows: [], satisfied: true, onPath: pathPairs.has(pair) });
      pathPairs.delete(pair);
    }
  }
  // Path steps below the top level (a child composite to its culprit).
  for (const pair of pathPairs) {
    const [from, to] = pair.split('\u0000');
    const dep = edges.find((e) => e.from === from && e.to === to);
    if (dep) dep.onPath = true;
    else edges.push({ from, to, kind: 'containment', flows: [], satisfied: true, onPath: true });
  }
  return { root, nodes, edges, culprits, onPath };
}

/** pointerPath turns a JSON pointer under a document into a dotted path: status + /a/b is status.a.b. */
function pointerPath(doc, pointer) {
  if (!pointer) return doc;
  const parts = pointer.replace(/^\//, '').split('/').map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  return [doc, ...parts].join('.');
}

/** flowLabel is an edge's value flows as short text: where from, where to. */
export function flowLabel(flows) {
  return (flows || []).map((f) => `${f.expr ? f.expr : pointerPath('status', f.from)} → ${pointerPath('spec', f.to)}`).join('; ');
}
