// Spawning, watching and stopping the processes under test, and reading their figures from /proc.
import { spawn, spawnSync, type ChildProcess, type SpawnOptions } from 'node:child_process'
import { closeSync, openSync, readFileSync } from 'node:fs'
import { get } from 'node:http'
import { createServer } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import type { Baseline } from './report.js'

/** The entry of each baseline the service is measured against. */
export const BASELINE_ENTRIES: Record<Baseline, string> = {
  'node:http': fileURLToPath(new URL('./baseline.js', import.meta.url)),
  fastify: fileURLToPath(new URL('./fastify-baseline.js', import.meta.url))
}

export const hasTaskset = spawnSync('taskset', ['--version']).status === 0

/** /proc/<pid>/stat counts CPU time in clock ticks of 1/100 s (getconf CLK_TCK). */
const MICROS_PER_TICK = 10_000

/** CPU time (utime + stime, all threads) a process has used so far, in µs. */
export function cpuMicros (pid: number, thread?: number): number {
  // A thread's own: /proc/<pid>/task/<tid>/stat (the main thread's tid is the pid).
  const stat = readFileSync(thread === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${thread}/stat`, 'utf8')
  // Fields are counted from after the command name, which may hold spaces and parentheses.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) * MICROS_PER_TICK
}

/** CPU time every process of the machine has used so far, in µs (/proc/stat: all but idle and I/O wait). */
export function machineCpuMicros (): number {
  const stat = readFileSync('/proc/stat', 'utf8')
  const [, ...ticks] = stat.slice(0, stat.indexOf('\n')).trim().split(/\s+/).map(Number)
  // user nice system idle iowait irq softirq (then steal, another machine's): guest time is counted in user already.
  const [user, nice, system, , , irq, softirq] = ticks
  return (user + nice + system + irq + softirq) * MICROS_PER_TICK
}

/** A size in kB of /proc/<pid>/status (VmHWM, VmRSS, ...), in MiB. */
function statusMiB (pid: number, field: string): number {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  return match === null ? Number.NaN : Number(match[1]) / 1024
}

/** The peak resident set size of a process (VmHWM), in MiB. */
export const peakRssMiB = (pid: number): number => statusMiB(pid, 'VmHWM')

/** The resident set size of a process now (VmRSS), in MiB. */
export const rssMiB = (pid: number): number => statusMiB(pid, 'VmRSS')

/** A port free right now on 127.0.0.1. */
export function freePort (): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer().once('error', reject).listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })
}

/** The status of a GET on a fresh connection, 0 when there is no answer. */
export function statusOf (url: string): Promise<number> {
  return new Promise((resolve) => {
    const request = get(url, { agent: false }, (response) => {
      response.resume()
      resolve(response.statusCode ?? 0)
    })
    request.once('error', () => resolve(0))
    request.setTimeout(2000, () => request.destroy())
  })
}

export interface Spawned {
  child: ChildProcess
  /** Resolves once the process is gone (or could not be spawned). */
  exited: Promise<void>
}

const running = new Set<Spawned>()

/** Spawns a process that stopAll() and killAllNow() will end. */
export function spawnTracked (command: string, args: string[], options: SpawnOptions): Spawned {
  const child = spawn(command, args, options)
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => resolve())
    child.once('error', () => resolve())
  })
  const spawned = { child, exited }
  running.add(spawned)
  exited.then(() => running.delete(spawned), () => {})
  return spawned
}

const isAlive = ({ child }: Spawned) => child.exitCode === null && child.signalCode === null

/** SIGTERM, then SIGKILL if the process is still there after `graceMs`. */
export async function stop (spawned: Spawned, graceMs = 10_000): Promise<void> {
  if (isAlive(spawned)) spawned.child.kill('SIGTERM')
  const timer = setTimeout(() => spawned.child.kill('SIGKILL'), graceMs)
  await spawned.exited
  clearTimeout(timer)
}

export async function stopAll (): Promise<void> {
  await Promise.all([...running].map((spawned) => stop(spawned)))
}

/** The last resort on process exit: nothing asynchronous can run any more. */
export function killAllNow (): void {
  for (const spawned of running) if (isAlive(spawned)) spawned.child.kill('SIGKILL')
}

export interface Server extends Spawned {
  name: string
  /** http://127.0.0.1:<port> */
  url: string
  pid: number
  /** Milliseconds from spawn to the first 200 of the readiness path. */
  startMs: number
  stderrFile: string
}

export class StartError extends Error {
  override name = 'StartError'
  constructor (target: string, reason: string, readonly stderr: string) {
    super(`${target} did not start: ${reason}`)
  }
}

/** The end of a log file, for an error message. */
export function tail (file: string, bytes = 2000): string {
  try {
    return readFileSync(file, 'utf8').slice(-bytes).trim()
  } catch {
    return ''
  }
}

export interface StartOptions {
  name: string
  /** The Node.js entry to run. */
  script: string
  /** The process's environment, besides PATH, HOST and PORT. */
  env: Record<string, string>
  stderrFile: string
  readyPath?: string
  pollMs?: number
  /** Options for node itself, before the script (e.g. --cpu-prof). */
  nodeOptions?: string[]
  /** Pinned to core 0 (the default, where taskset exists), or left where the kernel puts it. */
  pinned?: boolean
}

/**
 * Starts `node <script>` on a free port, pinned to core 0 when taskset exists (unless `pinned` is false), with stdout
 * discarded and stderr appended to a file; resolves once `readyPath` answers 200.
 */
export async function startServer (options: StartOptions): Promise<Server> {
  const { name, script, stderrFile, readyPath = '/readyz', pollMs = 10, nodeOptions = [], pinned = true } = options
  const port = await freePort()
  // Nothing else from the bench's environment: every other setting of the service stays as shipped.
  const env = { PATH: process.env.PATH ?? '', ...options.env, HOST: '127.0.0.1', PORT: String(port) }
  const node = [process.execPath, ...nodeOptions, script]
  const [command, args] = hasTaskset && pinned ? ['taskset', ['-c', '0', ...node]] : [node[0], node.slice(1)]
  const fd = openSync(stderrFile, 'a')
  const started = performance.now()
  let spawned: Spawned
  try {
    spawned = spawnTracked(command, args, { env, stdio: ['ignore', 'ignore', fd] })
  } finally {
    closeSync(fd)
  }
  const url = `http://127.0.0.1:${port}`
  const deadline = started + 30_000
  while (await statusOf(url + readyPath) !== 200) {
    if (!isAlive(spawned)) {
      await spawned.exited
      const { exitCode, signalCode } = spawned.child
      throw new StartError(name, `exited (code ${exitCode}, signal ${signalCode})`, tail(stderrFile))
    }
    if (performance.now() > deadline) {
      await stop(spawned)
      throw new StartError(name, `${readyPath} did not answer 200 within 30 s`, tail(stderrFile))
    }
    await sleep(pollMs)
  }
  const startMs = performance.now() - started
  return { ...spawned, name, url, pid: spawned.child.pid!, startMs, stderrFile }
}
