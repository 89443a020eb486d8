// Line diffs of JSON documents, for spec history. Pure.

/** pretty prints v as JSON with sorted keys, so key order never shows as a change. */
export function pretty(v) {
  return JSON.stringify(sortKeys(v), null, 2) ?? 'null';
}

function sortKeys(v) {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v && typeof v === 'object') {
    const out = {};
    for (const k of Object.keys(v).sort()) out[k] = sortKeys(v[k]);
    return out;
  }
  return v;
}

// Past this many lines a side, the diff is shown as a whole replacement:
// the LCS table grows with the product of the sides.
const MAX_LINES = 2000;

/**
 * diffLines returns the lines of a and b as [{op: ' ' | '-' | '+', text}],
 * a longest-common-subsequence diff. Lines are compared by key(line): the
 * default ignores a trailing comma, so adding a JSON member after a line
 * does not show that line as changed.
 */
export function diffLines(a, b, key = (line) => line.replace(/,$/, '')) {
  const x = a.split('\n');
  const y = b.split('\n');
  const kx = x.map(key);
  const ky = y.map(key);
  if (x.length > MAX_LINES || y.length > MAX_LINES) {
    return [...x.map((text) => ({ op: '-', text })), ...y.map((text) => ({ op: '+', text }))];
  }
  const n = x.length;
  const m = y.length;
  // lcs[i][j]: the LCS length of x[i:] and y[j:].
  const lcs = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      lcs[i][j] = kx[i] === ky[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  const out = [];
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (kx[i] === ky[j]) {
      out.push({ op: ' ', text: y[j] });
      i++;
      j++;
    } else if (lcs[i + 1][j] >= lcs[i][j + 1]) {
      out.push({ op: '-', text: x[i++] });
    } else {
      out.push({ op: '+', text: y[j++] });
    }
  }
  while (i < n) out.push({ op: '-', text: x[i++] });
  while (j < m) out.push({ op: '+', text: y[j++] });
  return out;
}
