// JSON Schema as rows a person can read: one per property path, with its
// type, whether it is required, its constraints and description. Pure.

const CONSTRAINTS = [
  'enum', 'const', 'format', 'pattern', 'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum',
  'minLength', 'maxLength', 'minItems', 'maxItems', 'uniqueItems', 'default', 'additionalProperties',
];

function typeOf(s) {
  if (!s || typeof s !== 'object') return 'any';
  if (s.type) return Array.isArray(s.type) ? s.type.join(' | ') : s.type;
  if (s.$ref) return s.$ref;
  for (const k of ['oneOf', 'anyOf', 'allOf']) if (Array.isArray(s[k])) return k;
  if (s.enum) return 'enum';
  if (s.properties) return 'object';
  return 'any';
}

function constraints(s) {
  const out = [];
  for (const k of CONSTRAINTS) {
    if (s[k] === undefined) continue;
    if (k === 'additionalProperties' && typeof s[k] === 'object') continue;
    out.push(`${k}: ${JSON.stringify(s[k])}`);
  }
  return out.join(', ');
}

/** schemaRows flattens schema into rows, at most limit, depth first. */
export function schemaRows(schema, limit = 500) {
  const rows = [];
  const walk = (s, path, required, depth) => {
    if (rows.length >= limit || !s || typeof s !== 'object' || depth > 12) return;
    if (path) {
      rows.push({ path, type: typeOf(s), required, constraints: constraints(s), description: s.description || '' });
    }
    const req = new Set(Array.isArray(s.required) ? s.required : []);
    for (const [k, v] of Object.entries(s.properties || {})) walk(v, path ? `${path}.${k}` : k, req.has(k), depth + 1);
    if (s.items && typeof s.items === 'object') walk(s.items, `${path || ''}[]`, false, depth + 1);
    if (s.additionalProperties && typeof s.additionalProperties === 'object') {
      walk(s.additionalProperties, `${path || ''}.*`, false, depth + 1);
    }
  };
  walk(schema, '', false, 0);
  return rows;
}
