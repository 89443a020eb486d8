// Element builders. Text always goes in as text nodes, never as HTML, so
// API data cannot inject markup.

const SVG_NS = 'http://www.w3.org/2000/svg';

function build(el, attrs, children) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') {
      el.addEventListener(k.slice(2), v);
    } else if (k === 'dataset') {
      Object.assign(el.dataset, v);
    } else {
      el.setAttribute(k, v === true ? '' : String(v));
    }
  }
  append(el, children);
  return el;
}

/** append adds children (nodes, strings, numbers, arrays; null is skipped). */
export function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

/** h builds an HTML element. */
export function h(tag, attrs, ...children) {
  return build(document.createElement(tag), attrs, children);
}

/** s builds an SVG element. */
export function s(tag, attrs, ...children) {
  return build(document.createElementNS(SVG_NS, tag), attrs, children);
}

/** replace empties el and appends children. */
export function replace(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

/** link is an anchor the router handles without a page load. */
export function link(href, ...children) {
  return h('a', { href, 'data-link': true }, ...children);
}

/** phaseBadge shows a phase in its colour. */
export function phaseBadge(phase) {
  return h('span', { class: `badge phase-${(phase || 'unknown').toLowerCase()}` }, phase || '?');
}

/** time formats an RFC 3339 timestamp for people, local time. */
export function time(ts) {
  if (!ts) return '';
  const d = new Date(ts);
  return isNaN(d) ? ts : d.toLocaleString();
}

/** errorBox shows an error where data would have been. */
export function errorBox(err) {
  return h('div', { class: 'error', role: 'alert' }, err && err.message ? err.message : String(err));
}

/** debounce calls fn once, ms after the last of a burst of calls. */
export function debounce(fn, ms) {
  let t = null;
  const d = (...args) => {
    clearTimeout(t);
    t = setTimeout(() => fn(...args), ms);
  };
  d.cancel = () => clearTimeout(t);
  return d;
}
