import { existsSync, statSync } from 'node:fs'
import { isAbsolute, relative, resolve, dirname } from 'node:path'
import type MarkdownIt from 'markdown-it'

export interface RepoLinkOptions {
  docsDir: string // absolute path of the site's source directory
  repoRoot: string // absolute path of the repository root
  repoURL: string // e.g. https://github.com/convergehq/converge
  repoBranch: string
}

// repoLinks rewrites relative Markdown links that leave the docs directory
// (../stdworker/examples/stdio, ../proto/converge/v1/control.proto) into
// links to the file in the repository's web view (and fails the build
// when the file does not exist), so the pages keep the
// links that work on GitHub and the site gets links that work too.
// It runs as a core rule, before rendering, so VitePress's own link
// handling and dead-link check see the rewritten, external URL.
export function repoLinks(md: MarkdownIt, opts: RepoLinkOptions): void {
  md.core.ruler.push('converge_repo_links', (state) => {
    const page: string | undefined = state.env?.path ?? (state.env?.relativePath ? resolve(opts.docsDir, state.env.relativePath) : undefined)
    if (!page) return
    for (const block of state.tokens) {
      for (const tok of block.children ?? []) {
        if (tok.type !== 'link_open') continue
        const href = tok.attrGet('href')
        if (!href || /^[a-z][a-z0-9+.-]*:/i.test(href) || href.startsWith('#') || href.startsWith('/')) continue
        const [path, hash = ''] = href.split('#', 2)
        const target = resolve(dirname(page), decodeURI(path))
        const inDocs = relative(opts.docsDir, target)
        if (!inDocs.startsWith('..') && !isAbsolute(inDocs)) continue
        const inRepo = relative(opts.repoRoot, target)
        if (inRepo.startsWith('..') || isAbsolute(inRepo)) continue
        if (!existsSync(target)) {
          // A dead link out of the docs fails the build like a dead page link does.
          throw new Error(`${relative(opts.repoRoot, page)}: link ${href} names ${inRepo}, which is not in the repository`)
        }
        const view = statSync(target).isDirectory() ? 'tree' : 'blob'
        const url = `${opts.repoURL}/${view}/${opts.repoBranch}/${inRepo.split('\\').join('/')}`
        tok.attrSet('href', hash ? `${url}#${hash}` : url)
      }
    }
  })
}
