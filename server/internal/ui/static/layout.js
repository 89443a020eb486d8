// A layered (Sugiyama-style) DAG layout: longest-path layers, dummy nodes
// on edges that span layers, barycentre ordering sweeps, then coordinates.
// Pure functions of their input, so they are tested without a browser.

/**
 * layout places nodes ({id, width, height}) and edges ({from, to}, drawn
 * from an upper to a lower layer) and returns {nodes: Map id->{x, y, width,
 * height, layer}, edges: [{from, to, points, data}], skipped, width, height}; x and y are a
 * node's top-left corner. Edges that would close a cycle, or that name an
 * unknown node, are dropped from the layering and reported in skipped.
 */
export function layout(nodes, edges, opts = {}) {
  const gapX = opts.gapX ?? 40;
  const gapY = opts.gapY ?? 70;
  const dummyWidth = opts.dummyWidth ?? 12;
  const margin = opts.margin ?? 20;

  const byId = new Map(nodes.map((n) => [n.id, n]));
  const { kept, skipped } = acyclic(nodes, edges, byId);
  const layerOf = longestPathLayers(nodes, kept);

  // Expand edges into unit steps through dummy nodes.
  const vertices = new Map(); // id -> {id, layer, width, height, dummy}
  for (const n of nodes) {
    vertices.set(n.id, { id: n.id, layer: layerOf.get(n.id), width: n.width, height: n.height, dummy: false });
  }
  const steps = []; // [upper, lower] between adjacent layers
  const chains = []; // per edge: the vertex ids from its source to its target
  let dummies = 0;
  for (const e of kept) {
    const chain = [e.from];
    for (let l = layerOf.get(e.from) + 1; l < layerOf.get(e.to); l++) {
      const id = `\u0000dummy${dummies++}`;
      vertices.set(id, { id, layer: l, width: dummyWidth, height: 0, dummy: true });
      chain.push(id);
    }
    chain.push(e.to);
    for (let i = 1; i < chain.length; i++) steps.push([chain[i - 1], chain[i]]);
    chains.push({ edge: e, chain });
  }

  const layers = orderLayers(vertices, steps, opts.sweeps ?? 8);
  const rowHeight = Math.max(1, ...nodes.map((n) => n.height));
  assignX(layers, vertices, steps, gapX, opts.straighten ?? 4);
  let minX = Infinity;
  let maxX = -Infinity;
  for (const v of vertices.values()) {
    minX = Math.min(minX, v.x);
    maxX = Math.max(maxX, v.x + v.width);
  }
  if (!vertices.size) minX = maxX = 0;
  const width = maxX - minX;
  layers.forEach((layer, l) => {
    for (const id of layer) {
      const v = vertices.get(id);
      v.x += margin - minX;
      v.y = margin + l * (rowHeight + gapY) + (v.dummy ? rowHeight / 2 : (rowHeight - v.height) / 2);
    }
  });

  const placed = new Map();
  for (const n of nodes) {
    const v = vertices.get(n.id);
    placed.set(n.id, { x: v.x, y: v.y, width: v.width, height: v.height, layer: v.layer });
  }
  const outEdges = chains.map(({ edge, chain }) => {
    // Out of the source's bottom, through each dummy, into the target's top.
    const points = chain.map((id, i) => {
      const v = vertices.get(id);
      return { x: v.x + v.width / 2, y: i === 0 ? v.y + v.height : v.y };
    });
    return { from: edge.from, to: edge.to, points, data: edge.data };
  });
  return {
    nodes: placed,
    edges: outEdges,
    skipped,
    width: width + 2 * margin,
    height: margin * 2 + Math.max(0, layers.length) * (rowHeight + gapY) - (layers.length ? gapY : 0),
  };
}

/**
 * assignX gives each vertex an x (its left edge). Layers start packed and
 * centred; then each pass pulls every vertex toward the mean centre of its
 * neighbours in the layer just placed (down, then up), keeping the order
 * and the gaps: the two ways of pushing vertices apart from their wanted
 * places (rightward from the left, leftward from the right) both keep the
 * gaps, and so does their average, which does not favour a side.
 */
function assignX(layers, vertices, steps, gap, passes) {
  const widths = layers.map((layer) => layer.reduce((w, id) => w + vertices.get(id).width, 0) + gap * Math.max(0, layer.length - 1));
  const widest = Math.max(0, ...widths);
  layers.forEach((layer, l) => {
    let x = (widest - widths[l]) / 2;
    for (const id of layer) {
      vertices.get(id).x = x;
      x += vertices.get(id).width + gap;
    }
  });
  const up = new Map();
  const down = new Map();
  for (const id of vertices.keys()) {
    up.set(id, []);
    down.set(id, []);
  }
  for (const [a, b] of steps) {
    down.get(a).push(b);
    up.get(b).push(a);
  }
  const centre = (id) => vertices.get(id).x + vertices.get(id).width / 2;
  const place = (layer, nbrs) => {
    const vs = layer.map((id) => vertices.get(id));
    const want = layer.map((id, i) => {
      const ns = nbrs.get(id);
      return ns.length ? ns.reduce((sum, n) => sum + centre(n), 0) / ns.length - vs[i].width / 2 : vs[i].x;
    });
    const left = want.slice();
    for (let i = 1; i < vs.length; i++) left[i] = Math.max(want[i], left[i - 1] + vs[i - 1].width + gap);
    const right = want.slice();
    for (let i = vs.length - 2; i >= 0; i--) right[i] = Math.min(want[i], right[i + 1] - vs[i].width - gap);
    vs.forEach((v, i) => {
      v.x = (left[i] + right[i]) / 2;
    });
  };
  for (let p = 0; p < passes; p++) {
    for (let l = 1; l < layers.length; l++) place(layers[l], up);
    for (let l = layers.length - 2; l >= 0; l--) place(layers[l], down);
  }
}

/** acyclic keeps the edges of a DFS that close no cycle, in input order. */
function acyclic(nodes, edges, byId) {
  const skipped = [];
  const valid = [];
  const seenPair = new Set();
  for (const e of edges) {
    const key = `${e.from}\u0000${e.to}`;
    if (!byId.has(e.from) || !byId.has(e.to) || e.from === e.to || seenPair.has(key)) {
      skipped.push(e);
      continue;
    }
    seenPair.add(key);
    valid.push(e);
  }
  const out = new Map(nodes.map((n) => [n.id, []]));
  valid.forEach((e, i) => out.get(e.from).push(i));
  const state = new Map(); // 1: on the stack, 2: done
  const back = new Set();
  for (const n of nodes) {
    if (state.has(n.id)) continue;
    // Iterative DFS: deep graphs must not overflow the call stack.
    const stack = [[n.id, 0]];
    state.set(n.id, 1);
    while (stack.length) {
      const top = stack[stack.length - 1];
      const list = out.get(top[0]);
      if (top[1] >= list.length) {
        state.set(top[0], 2);
        stack.pop();
        continue;
      }
      const ei = list[top[1]++];
      const to = valid[ei].to;
      if (state.get(to) === 1) back.add(ei);
      else if (!state.has(to)) {
        state.set(to, 1);
        stack.push([to, 0]);
      }
    }
  }
  const kept = valid.filter((_, i) => !back.has(i));
  for (const i of back) skipped.push(valid[i]);
  return { kept, skipped };
}

/** longestPathLayers puts each node one layer below its lowest predecessor. */
function longestPathLayers(nodes, edges) {
  const indeg = new Map(nodes.map((n) => [n.id, 0]));
  const succ = new Map(nodes.map((n) => [n.id, []]));
  for (const e of edges) {
    indeg.set(e.to, indeg.get(e.to) + 1);
    succ.get(e.from).push(e.to);
  }
  const layer = new Map(nodes.map((n) => [n.id, 0]));
  const queue = nodes.filter((n) => indeg.get(n.id) === 0).map((n) => n.id);
  for (let i = 0; i < queue.length; i++) {
    const id = queue[i];
    for (const to of succ.get(id)) {
      layer.set(to, Math.max(layer.get(to), layer.get(id) + 1));
      indeg.set(to, indeg.get(to) - 1);
      if (indeg.get(to) === 0) queue.push(to);
    }
  }
  return layer;
}

/**
 * orderLayers orders each layer's vertices to reduce crossings: sweeps
 * down and up, sorting each layer by the mean position of its neighbours
 * in the layer just swept (the barycentre), keeping the best order seen.
 */
function orderLayers(vertices, steps, sweeps) {
  const layers = [];
  for (const v of vertices.values()) {
    (layers[v.layer] ||= []).push(v.id);
  }
  for (let l = 0; l < layers.length; l++) layers[l] ||= [];
  const up = new Map(); // id -> neighbours in the layer above
  const down = new Map(); // id -> neighbours in the layer below
  for (const id of vertices.keys()) {
    up.set(id, []);
    down.set(id, []);
  }
  for (const [a, b] of steps) {
    down.get(a).push(b);
    up.get(b).push(a);
  }
  let best = layers.map((l) => l.slice());
  let bestCrossings = crossings(best, down);
  for (let s = 0; s < sweeps && bestCrossings > 0; s++) {
    const goingDown = s % 2 === 0;
    const range = goingDown ? [...layers.keys()].slice(1) : [...layers.keys()].slice(0, -1).reverse();
    for (const l of range) {
      const ref = layers[goingDown ? l - 1 : l + 1];
      const pos = new Map(ref.map((id, i) => [id, i]));
      const nbrs = goingDown ? up : down;
      const bary = new Map();
      layers[l].forEach((id, i) => {
        const ns = nbrs.get(id);
        bary.set(id, ns.length ? ns.reduce((sum, n) => sum + pos.get(n), 0) / ns.length : i);
      });
      // A stable sort keeps ties in their current order.
      layers[l] = layers[l].slice().sort((a, b) => bary.get(a) - bary.get(b));
    }
    const c = crossings(layers, down);
    if (c < bestCrossings) {
      best = layers.map((l) => l.slice());
      bestCrossings = c;
    }
  }
  return best;
}

/** crossings counts pairs of unit edges that cross between adjacent layers. */
export function crossings(layers, down) {
  let total = 0;
  for (let l = 0; l + 1 < layers.length; l++) {
    const pos = new Map(layers[l + 1].map((id, i) => [id, i]));
    const segs = [];
    layers[l].forEach((id, i) => {
      for (const to of down.get(id) || []) if (pos.has(to)) segs.push([i, pos.get(to)]);
    });
    for (let i = 0; i < segs.length; i++) {
      for (let j = i + 1; j < segs.length; j++) {
        const [a1, b1] = segs[i];
        const [a2, b2] = segs[j];
        if ((a1 - a2) * (b1 - b2) < 0) total++;
      }
    }
  }
  return total;
}
