import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import t, { type Test } from 'tap'
import { TOKEN } from '../../helpers/app.js'
import { codeBlocks, PAGES, type CodeBlock } from '../../helpers/docs-pages.js'
import { startServer } from '../../helpers/server-process.js'

// Each shell block of README.md and docs/ that runs curl is a session: it runs as written against
// a service started with the settings its start line gives (or the defaults), and each command
// prints what the `# ` lines right after it say. `...` in such a line stands for anything.

interface Statement { command: string, expected: string[] }

const START = /^(?<env>(\w+=\S+\s+)*)(npm start|node (dist\/)?server\.mjs)$/
const PLACEHOLDER = /^TOKEN=\.\.\.(\s|$)/
const DOCUMENTED = /http:\/\/127\.0\.0\.1:(3000|9464)/g
const SERVICE_URL = /^http:\/\/127\.0\.0\.1:(3000|9464)(\/|$)/
const run = promisify(execFile)

/** A block's statements (continued lines joined), each with the `# ` lines that follow it. */
function statementsOf (code: string): Statement[] {
  const statements: Statement[] = []
  let open = false
  for (const line of code.replace(/\\\n\s*/g, '').split('\n')) {
    if (line.startsWith('# ') && open) statements.at(-1)!.expected.push(line.slice(2))
    else if (line.trim() === '' || line.startsWith('#')) open = false
    else {
      statements.push({ command: line.replace(/\s+#\s.*$/, ''), expected: [] })
      open = true
    }
  }
  return statements
}

// Variables bash sets of its own, not the block's.
const SHELL_OWN = new Set(['PATH', 'PWD', 'OLDPWD', 'SHLVL', '_'])

/** What the service's environment holds as the block starts it: what the lines before export, and the start line's `NAME=value` words. */
async function startEnv (preamble: string[], words: string): Promise<Record<string, string>> {
  const script = [...preamble, ...(words.trim() === '' ? [] : [`export ${words}`]), 'env -0'].join('\n')
  const { stdout } = await run('bash', ['-c', script], { env: { PATH: process.env.PATH } })
  const pairs = stdout.split('\0').filter(Boolean).map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)])
  return Object.fromEntries(pairs.filter(([name]) => !SHELL_OWN.has(name)))
}

const escaped = (text: string) => text.replace(/[\\^$.*+?()[\]{}|]/g, '\\$&')

/** A `# ` line as a pattern: as written, but `...` for anything (`,...` for anything or nothing, its comma included). */
const pattern = (line: string) =>
  new RegExp(`^${line.split(',...').map((part) => part.split('...').map(escaped).join('.*')).join('(,.*)?')}$`)

/** Whether `expected` matches `printed`: line for line, or in order among them for an answer shown with its headers (-i). */
function matches (printed: string[], expected: string[], headers: boolean): boolean {
  if (!headers) return printed.length === expected.length && expected.every((line, index) => pattern(line).test(printed[index]))
  let at = 0
  for (const line of printed) if (at < expected.length && pattern(expected[at]).test(line)) at++
  return at === expected.length
}

async function runSession (t: Test, { page, line, code }: CodeBlock) {
  const statements = statementsOf(code)
  const preamble = statements.filter(({ command }) => !START.test(command) && !command.startsWith('curl ') && !PLACEHOLDER.test(command))
    .map(({ command }) => command)
  const start = statements.map(({ command }) => START.exec(command)).find((match) => match !== null)
  const env = await startEnv(preamble, start?.groups!.env ?? '')
  for (const name of ['PORT', 'METRICS_PORT']) if (name in env) env[name] = '0' // the documented ports may be taken here
  const server = await startServer(t, { API_TOKENS: TOKEN, ...env })
  const metrics = env.METRICS_PORT === undefined
    ? undefined
    : /^Metrics listening at (\S+)$/.exec((await server.waitForLog((log) => /^Metrics listening at /.test(log.msg ?? ''))).msg!)![1]
  const curls = statements.filter(({ command }) => command.startsWith('curl '))
  const script = [...preamble, ...curls.map(({ command }) => `${command.replace(DOCUMENTED, (_url, port: string) =>
    port === '3000' ? server.url : metrics!)}\nstatus=$?; echo; echo "<<<$status>>>"`)].join('\n')
  const { stdout } = await run('bash', ['-c', script], { env: { ...process.env, TOKEN } })
  const outputs = stdout.split(/<<<(\d+)>>>\n/)
  curls.forEach(({ command, expected }, index) => {
    const [printed, code] = [outputs[index * 2], outputs[index * 2 + 1]]
    const where = `${page}:${line}: ${command}`
    t.equal(code, '0', `${where}: curl exits 0`)
    const text = printed.replace(/\r/g, '').replace(/\n+$/, '')
    const lines = text === '' ? [] : text.split('\n')
    t.ok(matches(lines, expected, /\s-\w*i\w*\s/.test(` ${command} `)), `${where} prints what the page says`, { printed: lines, expected })
  })
  // Of the words of a command, its headers aside (an Origin names another site), every URL is the service's.
  const urls = (command: string) => command.replace(/-H ('[^']*'|"[^"]*")/g, '').match(/https?:\/\/\S+/g) ?? []
  t.ok(curls.every(({ command }) => urls(command).every((url) => SERVICE_URL.test(url))), 'every curl asks the service started here')
  return curls.length
}

const sessions = PAGES.flatMap(codeBlocks).filter(({ lang, code }) => lang === 'sh' && /^curl /m.test(code))

t.test('the curl sessions of README.md and docs/ print what they say', async (t) => {
  t.ok(sessions.length >= 5, `${sessions.length} sessions`)
  let commands = 0
  for (const session of sessions) {
    await t.test(`${session.page}:${session.line}`, async (t) => { commands += await runSession(t, session) })
  }
  t.ok(commands >= 20, `${commands} curl commands run`)
})
