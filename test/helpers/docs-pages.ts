import { readdirSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

/** The repository's root, with its trailing slash. */
export const ROOT = fileURLToPath(new URL('../../', import.meta.url))

/** The front door and the manual's pages, as paths from the root. */
export const PAGES = ['README.md', ...readdirSync(`${ROOT}docs`).filter((name) => name.endsWith('.md')).sort().map((name) => `docs/${name}`)]

export const readPage = (page: string) => readFileSync(`${ROOT}${page}`, 'utf8')

export interface CodeBlock {
  page: string
  /** The line of its opening fence, from 1. */
  line: number
  /** The fence's info string: sh, ts, json… */
  lang: string
  /** Its text, without the indentation of a block inside a list item. */
  code: string
  /** The file it shows, when a `<!-- path -->` line comes right before it. */
  file?: string
}

const FENCE = /^( *)```(\w*)\n([\s\S]*?)^\1```$/gm

/** The fenced code blocks of a page. */
export function codeBlocks (page: string): CodeBlock[] {
  const text = readPage(page)
  return [...text.matchAll(FENCE)].map((match) => {
    const [, indent, lang, body] = match
    const before = text.slice(0, match.index)
    const file = /<!-- ([\w./-]+) -->\n$/.exec(before)?.[1]
    const code = body.split('\n').map((line) => line.slice(indent.length)).join('\n')
    return { page, line: before.split('\n').length, lang, code, ...(file !== undefined && { file }) }
  })
}

/** A page's prose: its code blocks and inline code taken out, so that neither reads as a link or a heading. */
export const proseOf = (text: string) => text.replace(FENCE, '').replace(/`[^`\n]*`/g, '')

/** The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces as hyphens, repeats numbered. */
export function anchorsOf (text: string): Set<string> {
  const seen = new Map<string, number>()
  const anchors = new Set<string>()
  for (const [, heading] of text.replace(FENCE, '').matchAll(/^#{1,6} (.+)$/gm)) {
    const slug = heading.toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, '').replace(/ /g, '-')
    const count = seen.get(slug) ?? 0
    seen.set(slug, count + 1)
    anchors.add(count === 0 ? slug : `${slug}-${count}`)
  }
  return anchors
}

/** The commands of a shell block: continued lines joined, comments and blank lines dropped. */
export function shellCommands (code: string): string[] {
  return code.replace(/\\\n\s*/g, '').split('\n')
    .map((line) => line.replace(/(^|\s)#.*$/, '').trim())
    .filter((line) => line !== '')
}
