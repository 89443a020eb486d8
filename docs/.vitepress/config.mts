import { existsSync, readdirSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { defineConfig, type DefaultTheme } from 'vitepress'
import { repoLinks } from './repolinks.mts'

const docsDir = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const repoRoot = resolve(docsDir, '..')

// Links to repository files outside docs/ go to the source on GitHub;
// override both for a fork or a release branch.
const repoURL = process.env.DOCS_REPO_URL ?? 'https://github.com/convergehq/converge'
const repoBranch = process.env.DOCS_REPO_BRANCH ?? 'main'

// The sidebar, by reader: someone using kinds others publish, someone
// authoring kinds and workers, someone running the server, anyone looking
// a fact up, and someone working on Converge itself. A page that does not
// exist (yet) is left out, and any page not listed here is added under
// "More", so a new doc is never missing from the site nor a reason for the
// build to fail.
const sections: { text: string; pages: [string, string][] }[] = [
  {
    text: 'Introduction',
    pages: [
      ['concepts', 'Concepts'],
      ['compare', 'How Converge compares'],
    ],
  },
  {
    text: 'Use kinds',
    pages: [
      ['install', 'Install'],
      ['using-kinds', 'Using kinds on a shared server'],
      ['getting-started', 'Getting started on one machine'],
      ['sync', 'Sync from a directory'],
      ['ui', 'The web UI'],
      ['troubleshooting', 'Troubleshooting: condition reasons'],
      ['debugging', 'Debugging: why is it not Ready?'],
    ],
  },
  {
    text: 'Author kinds',
    pages: [
      ['publish-first-kind', 'Tutorial: publish your first kind'],
      ['kinds', 'Kinds: the manifest'],
      ['composition', 'Composition'],
      ['secrets', 'Secrets'],
      ['catalog', 'The kind catalog'],
      ['stability', 'Schema stability'],
      ['first-provider', 'Your first provider'],
      ['workers', 'Go and TypeScript SDKs'],
      ['stdworker', 'stdworker: stdio and stdshell'],
      ['stdworker-terraform', 'stdterraform'],
      ['stdworker-cel', 'stdcel: CEL graphs'],
      ['spec-fields', 'spec_fields: the compact schema'],
      ['stdworker-starlark', 'stdstarlark'],
      ['changing-safely', 'Changing things safely'],
      ['adopting', 'Adopting existing objects'],
      ['lifecycle', 'Lifecycle and operator actions'],
    ],
  },
  {
    text: 'Run Converge',
    pages: [
      ['deploy', 'Kubernetes and Helm'],
      ['production', 'Production checklist'],
      ['operations', 'Running Converge'],
      ['upgrades', 'Upgrades and compatibility'],
      ['limits', 'Limits'],
    ],
  },
  {
    text: 'Reference',
    pages: [
      ['api', 'The control API'],
      ['reference/index', 'Generated reference'],
      ['reference/conctl', 'conctl'],
      ['reference/converge', 'converge'],
      ['reference/stdworker', 'stdworker'],
      ['reference/api', 'API reference'],
      ['glossary', 'Glossary'],
    ],
  },
  {
    text: 'Internals',
    pages: [
      ['architecture', 'Architecture'],
      ['chaos', 'Chaos testing'],
      ['model-test', 'The model-based test'],
      ['benchmarks-protocol', 'Benchmark protocol'],
      ['benchmarks', 'Benchmarks'],
      ['bench-report', 'Latest benchmark report'],
    ],
  },
]

function pageExists(page: string): boolean {
  return existsSync(join(docsDir, page + '.md'))
}

function link(page: string): string {
  return '/' + page.replace(/(^|\/)index$/, '$1')
}

function sidebar(): DefaultTheme.SidebarItem[] {
  const listed = new Set(sections.flatMap((s) => s.pages.map(([p]) => p)))
  const groups: DefaultTheme.SidebarItem[] = sections.map((s) => ({
    text: s.text,
    items: s.pages.filter(([p]) => pageExists(p)).map(([p, text]) => ({ text, link: link(p) })),
  }))
  const extra = readdirSync(docsDir)
    .filter((f) => f.endsWith('.md') && f !== 'index.md')
    .map((f) => f.slice(0, -3))
    .filter((p) => !listed.has(p))
    .sort()
  if (extra.length > 0) {
    groups.push({ text: 'More', items: extra.map((p) => ({ text: p, link: link(p) })) })
  }
  return groups.filter((g) => g.items && g.items.length > 0)
}

export default defineConfig({
  title: 'Converge',
  description: 'A declarative control plane for platform teams: kinds as data, workers in any language, one Go binary over PostgreSQL.',
  base: process.env.DOCS_BASE ?? '/',
  cleanUrls: true,
  lastUpdated: false,
  // Dead links fail the build (VitePress's default, stated so nobody turns it off by accident).
  ignoreDeadLinks: false,
  srcExclude: ['**/README.md', 'node_modules/**'],
  markdown: {
    config(md) {
      md.use(repoLinks, { docsDir, repoRoot, repoURL, repoBranch })
    },
  },
  themeConfig: {
    nav: [
      { text: 'Install', link: '/install' },
      { text: 'Getting started', link: '/getting-started' },
      { text: 'Concepts', link: '/concepts' },
      { text: 'conctl', link: '/reference/conctl' },
      { text: 'API', link: '/reference/api' },
      { text: 'Compare', link: '/compare' },
    ],
    sidebar: sidebar(),
    outline: { level: [2, 3] },
    search: { provider: 'local' },
    socialLinks: [{ icon: 'github', link: repoURL }],
    editLink: {
      pattern: `${repoURL}/edit/${repoBranch}/docs/:path`,
      text: 'Edit this page',
    },
  },
})

