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

// The sidebar, by section. A page that does not exist (yet) is left out,
// and any page not listed here is added under "More", so a new doc is
// never missing from the site nor a reason for the build to fail.
const sections: { text: string; pages: [string, string][] }[] = [
  {
    text: 'Introduction',
    pages: [
      ['getting-started', 'Getting started'],
      ['concepts', 'Concepts'],
      ['compare', 'How Converge compares'],
    ],
  },
  {
    text: 'Authoring kinds',
    pages: [
      ['kinds', 'Kinds: the manifest'],
      ['composition', 'Composition'],
      ['lifecycle', 'Lifecycle and operator actions'],
      ['changing-safely', 'Changing things safely'],
      ['debugging', 'Debugging: why is it not Ready?'],
      ['stability', 'Schema stability'],
      ['catalog', 'The kind catalog'],
      ['sync', 'Sync from a directory'],
    ],
  },
  {
    text: 'Workers',
    pages: [
      ['first-provider', 'Your first provider'],
      ['workers', 'Go and TypeScript SDKs'],
      ['stdworker', 'stdworker: stdio and stdshell'],
      ['stdworker-terraform', 'stdterraform'],
      ['stdworker-cel', 'stdcel: CEL graphs'],
      ['stdworker-starlark', 'stdstarlark'],
    ],
  },
  {
    text: 'Operations',
    pages: [
      ['operations', 'Running Converge'],
      ['deploy', 'Kubernetes and Helm'],
      ['limits', 'Limits'],
      ['chaos', 'Chaos testing'],
      ['architecture', 'Architecture'],
      ['model-test', 'The model-based test'],
      ['benchmarks', 'Benchmarks'],
      ['benchmarks-protocol', 'Benchmark protocol'],
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

