/**
 * deploy/Containerfile, checked as text: no container daemon runs where these tests run (the
 * README says it was not built here). What an operator relies on: the final image holds the
 * runtime folder only, runs as a user other than root, starts as the runtime folder does, on a
 * Node line `engines` names, and stops on SIGTERM.
 */
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { ConfigSchema } from '../../../service/config/index.js'

const ROOT = fileURLToPath(new URL('../../..', import.meta.url))

interface Instruction { keyword: string, args: string }

/** The instructions of a Containerfile: continuation lines joined, comments dropped. */
function instructions (text: string): Instruction[] {
  return text.replace(/\\\n/g, ' ').split('\n').map((line) => line.trim()).filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const [, keyword, args] = /^(\S+)\s+(.*)$/.exec(line)!
      return { keyword: keyword.toUpperCase(), args: args.replace(/\s+/g, ' ') }
    })
}

const all = instructions(readFileSync(join(ROOT, 'deploy/Containerfile'), 'utf8'))
const stageStarts = all.flatMap(({ keyword }, index) => keyword === 'FROM' ? [index] : [])
const stages = stageStarts.map((start, index) => all.slice(start, stageStarts[index + 1]))
const build = stages[0]
const final = stages.at(-1)!
const argsOf = (stage: Instruction[], keyword: string) => stage.filter((instruction) => instruction.keyword === keyword).map(({ args }) => args)
const env = Object.fromEntries(argsOf(final, 'ENV').flatMap((args) => [...args.matchAll(/(\w+)=(\S+)/g)].map(([, name, value]) => [name, value])))

t.test('two stages: the build runs the build and npm run runtime, and installs the runtime folder', async (t) => {
  t.equal(stages.length, 2)
  t.match(build[0].args, / AS build$/)
  const runs = argsOf(build, 'RUN').join('\n')
  t.match(runs, /npm run runtime/)
  t.match(runs, /cd runtime && npm ci --omit=dev/)
})

t.test('the final stage copies the runtime folder and nothing else, and runs as a user other than root', async (t) => {
  const [workdir] = argsOf(build, 'WORKDIR')
  t.strictSame(argsOf(final, 'COPY'), [`--from=build ${workdir}/runtime ./`], 'one COPY: the runtime folder')
  t.strictSame(argsOf(final, 'ADD'), [])
  const users = argsOf(final, 'USER')
  t.equal(users.length, 1)
  t.notMatch(users[0], /^(root|0)(:|$)/)
  t.ok(final.findIndex(({ keyword }) => keyword === 'USER') < final.findIndex(({ keyword }) => keyword === 'CMD'), 'set before the command')
})

t.test('the command is the runtime folder\'s start command', async (t) => {
  // The runtime folder as scripts/runtime.mjs writes it (dist/ must be built, as for every system test).
  const dir = t.testdir({})
  execFileSync(process.execPath, [join(ROOT, 'scripts/runtime.mjs'), '--out', dir, '--stores', 'sqlite'], { cwd: ROOT, stdio: 'pipe' })
  const { scripts } = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { scripts: { start: string } }
  const [cmd] = argsOf(final, 'CMD')
  t.equal((JSON.parse(cmd) as string[]).join(' '), scripts.start)
})

t.test('the Node base image is a line engines names, in both stages', async (t) => {
  const [arg] = argsOf(all.slice(0, stageStarts[0]), 'ARG')
  const major = /^NODE_VERSION=(\d+)$/.exec(arg)![1]
  const { engines } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } }
  t.match(engines.node, new RegExp(`\\^${major}\\.`), `Node ${major} is in ${engines.node}`)
  for (const stage of stages) t.match(stage[0].args, /^node:\$\{NODE_VERSION\}-/)
})

t.test('SIGTERM stops it; it listens on every address, on the port it exposes; the health check asks /healthz', async (t) => {
  t.strictSame(argsOf(final, 'STOPSIGNAL'), ['SIGTERM'])
  t.equal(env.HOST, '0.0.0.0', 'reachable from outside the container')
  t.strictSame(argsOf(final, 'EXPOSE'), [env.PORT])
  t.equal(Number(env.PORT), (ConfigSchema.properties.PORT as unknown as { default: number }).default, 'the config default')
  t.equal(env.NODE_ENV, 'production')
  const [check] = argsOf(final, 'HEALTHCHECK')
  t.match(check, /CMD \["node", "-e", ".*127\.0\.0\.1:\$\{process\.env\.PORT\}\/healthz/)
})

t.test('the build context leaves out what a checkout installed or built, which COPY . . would lay over the stage\'s own', async (t) => {
  const ignored = readFileSync(join(ROOT, '.dockerignore'), 'utf8').split('\n').filter((line) => line !== '' && !line.startsWith('#'))
  for (const path of ['**/node_modules', 'dist', 'runtime', '.git']) t.ok(ignored.includes(path), path)
})
