import { spawn } from 'node:child_process'
import { once } from 'node:events'
import t from 'tap'
import { NODE_ARGS, SERVER_ENTRY, serverEnv, type EnvOverrides } from '../helpers/server-process.js'

const quote = (word: string) => `'${word.replaceAll("'", "'\\''")}'`
// pino-pretty colours its output on a terminal.
const plain = (text: string) => text.replaceAll(/\x1b\[[0-9;]*m/g, '')  // eslint-disable-line no-control-regex
const LISTENING = /Server listening at http:\/\/127\.0\.0\.1:\d+/

// Each test waits on a service process of its own: side by side.
t.jobs = 2

/**
 * The service with its stdout on a terminal: util-linux `script` runs it on a pseudo-terminal and
 * copies what it writes to us. Resolves with that output once the service is listening and has been
 * stopped (SIGTERM to the service itself, so that it exits on its own).
 */
async function outputOnTerminal (overrides: EnvOverrides): Promise<string> {
  const command = ['exec', process.execPath, ...NODE_ARGS, SERVER_ENTRY].map(quote).join(' ')
  const script = spawn('script', ['-qfec', command, '/dev/null'], { env: serverEnv(overrides), stdio: ['ignore', 'pipe', 'inherit'] })
  t.teardown(() => { script.kill('SIGKILL') })
  let output = ''
  const exited = once(script, 'exit')
  const listening = new Promise<void>((resolve) => {
    script.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk
      if (LISTENING.test(plain(output))) resolve()
    })
  })
  await Promise.race([listening, exited])
  // The service's pid, as the line it logged gives it (pretty: `INFO (1234):`; JSON: `"pid":1234`).
  const pid = Number(/(?:\((\d+)\)|"pid":(\d+))/.exec(plain(output))!.slice(1).find(Boolean))
  process.kill(pid, 'SIGTERM')
  await exited
  return plain(output)
}

t.test('on a terminal, outside production, the log is pino-pretty\'s readable lines', async (t) => {
  const output = await outputOnTerminal({ NODE_ENV: 'development' })
  t.match(output, /INFO \(\d+\): Server listening at http:\/\/127\.0\.0\.1:\d+/)
  t.match(output, /INFO \(\d+\): shutting down: finishing requests in flight/, 'stopped on the signal, readable to the end')
  t.notMatch(output, /^\{"level"/m, 'no JSON line')
})

t.test('on a terminal in production the log stays JSON, one object a line, for the collector that reads it', async (t) => {
  const output = await outputOnTerminal({ NODE_ENV: 'production', API_TOKENS: 'a-production-token-0123456789' })
  const lines = output.split(/\r?\n/).filter((line) => line.trim() !== '')
  t.ok(lines.length >= 2, 'the start and the stop')
  for (const line of lines) t.match(JSON.parse(line), { level: Number, msg: String })
  t.ok(lines.some((line) => LISTENING.test(JSON.parse(line).msg)))
})
