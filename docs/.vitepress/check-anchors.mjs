// Checks every internal link of the built site, including its #fragment:
// VitePress fails the build on a link to a missing page, but not on a link
// to a missing heading. Run after `vitepress build docs`:
//
//   node docs/.vitepress/check-anchors.mjs [DIST]
//
// Exits 1, naming each page and link, if any fragment has no element with
// that id on the target page.
import { readFileSync, readdirSync, existsSync } from 'node:fs'
import { join, relative, dirname, resolve, posix } from 'node:path'
import { fileURLToPath } from 'node:url'

const dist = resolve(process.argv[2] ?? join(dirname(fileURLToPath(import.meta.url)), 'dist'))
const base = process.env.DOCS_BASE ?? '/'

function htmlFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name)
    if (e.isDirectory()) return e.name === 'assets' ? [] : htmlFiles(p)
    return e.name.endsWith('.html') ? [p] : []
  })
}

// The page file a site path names, with cleanUrls: /a → a.html, /a/ → a/index.html.
function pageFile(sitePath) {
  let p = decodeURIComponent(sitePath)
  if (!p.startsWith(base)) return null
  p = p.slice(base.length)
  if (p === '' || p.endsWith('/')) p += 'index'
  if (!p.endsWith('.html')) p += '.html'
  const file = join(dist, p)
  return existsSync(file) ? file : null
}

const ids = new Map()
function idsOf(file) {
  if (!ids.has(file)) {
    const html = readFileSync(file, 'utf8')
    ids.set(file, new Set([...html.matchAll(/\sid="([^"]*)"/g)].map((m) => m[1])))
  }
  return ids.get(file)
}

const problems = []
const files = htmlFiles(dist)
for (const file of files) {
  const html = readFileSync(file, 'utf8')
  const pagePath = '/' + relative(dist, file).split('\\').join('/')
  for (const [, raw] of html.matchAll(/\shref="([^"]*)"/g)) {
    const href = raw.replaceAll('&amp;', '&')
    if (/^[a-z][a-z0-9+.-]*:/i.test(href) || href.startsWith('//')) continue
    const [path, hash] = href.split('#', 2)
    if (!hash) continue
    const target = path === '' ? file : pageFile(path.startsWith('/') ? path : posix.join(posix.dirname(pagePath), path))
    if (!target) continue // a missing page is VitePress's own check
    if (!idsOf(target).has(decodeURIComponent(hash))) {
      problems.push(`${relative(dist, file)}: link ${href}: no heading or element with id "${decodeURIComponent(hash)}" on ${relative(dist, target)}`)
    }
  }
}
if (problems.length > 0) {
  console.error(`dead anchors (${problems.length}):\n  ` + [...new Set(problems)].join('\n  '))
  process.exit(1)
}
console.log(`anchors: ${files.length} pages checked, no dead anchors`)
