import { appendFileSync, existsSync, readFileSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { parse, type LosslessNumber } from 'lossless-json'
import type { Test } from 'tap'
import { openStream } from './feed-app.js'
import { plantBody } from './load.js'

/** This file: a follower in a child process runs it (`node <loaders> feed-follower.ts <poll|stream> <url> <token> <file>`). */
export const FOLLOWER_ENTRY = fileURLToPath(import.meta.url)

/** One change as a follower saw it: its cursor, the event's type, its exact id, its name (none for a delete). */
export interface Change { cursor: string, type: string, id: string, name: string | undefined }

/** An event as lossless-json reads it: every number kept as its literal, so an int64 id stays exact. */
interface LosslessEvent { type: string, id: LosslessNumber, name?: string }
const toChange = (cursor: string, { type, id, name }: LosslessEvent): Change => ({ cursor, type, id: id.value, name })
/** A stream event's data, read losslessly. */
const changeOf = (cursor: string, eventText: string): Change => toChange(cursor, parse(eventText) as LosslessEvent)

export interface Follower {
  changes: Change[]
  /** Connections that failed or ended (each followed by a resume from the last cursor). */
  resumes: number
  /** Answers other than 200 (a follower that meets one goes on at the next instance). */
  refusals: string[]
  /** Which instance each change came from. */
  from: string[]
  stop (): Promise<void>
}

export interface FollowOptions {
  /** The client closes its stream once it read this many events on it (a burst may take it past), and resumes with Last-Event-ID. */
  dropEvery?: number
  /** Told each change once it is recorded (a persisted follower writes it out). */
  onChange?: (change: Change) => void
  /** The cursor to resume after (none: from the oldest kept). */
  after?: string
}

/**
 * Follows GET /plants/changes at `urls[0]`, as a long-poll (`after=<next>&wait=5`) or as
 * Server-Sent Events (resuming with Last-Event-ID); a connection that fails moves on to the next
 * instance of `urls`, from the last cursor seen. Records every change until `stop()`.
 */
export function follow (kind: 'poll' | 'stream', urls: string[], token: string, options: FollowOptions = {}): Follower {
  const follower: Follower = { changes: [], resumes: 0, refusals: [], from: [], stop: async () => { state.stopped = true; abort.abort(); close(); await loop } }
  const state = { stopped: false }
  let at = 0
  let last = options.after
  const abort = new AbortController()
  let close = () => {}
  const record = (url: string, change: Change) => {
    follower.changes.push(change)
    follower.from.push(url)
    last = change.cursor
    options.onChange?.(change)
  }
  const moveOn = async (why?: string) => {
    if (state.stopped) return
    if (why !== undefined) follower.refusals.push(why)
    follower.resumes++
    at = (at + 1) % urls.length
    await sleep(200)
  }

  const poll = async (url: string) => {
    const after = last === undefined ? '' : `&after=${last}`
    const response = await fetch(`${url}/plants/changes?wait=5&limit=100${after}`, { headers: { authorization: `Bearer ${token}` }, signal: abort.signal })
    const text = await response.text()
    if (response.status !== 200) return moveOn(`${response.status} ${text}`)
    const page = parse(text) as { changes: Array<{ cursor: string, event: LosslessEvent }>, next: string }
    for (const { cursor, event } of page.changes) record(url, toChange(cursor, event))
    last = page.next
  }

  const stream = async (url: string) => {
    const headers: Record<string, string> = { authorization: `Bearer ${token}`, accept: 'text/event-stream' }
    if (last !== undefined) headers['last-event-id'] = last
    const open = await openStream(`${url}/plants/changes`, headers)
    close = open.close
    // Stopped while connecting: this connection is closed too.
    if (state.stopped) return open.close()
    if (open.status !== 200) return moveOn(`${open.status} ${await open.body()}`)
    const { state: received } = open
    for (let seen = 0; ;) {
      await open.until(() => received.events.length > seen)
      for (; seen < received.events.length; seen++) record(url, changeOf(received.events[seen].id!, received.events[seen].data))
      if (options.dropEvery !== undefined && seen >= options.dropEvery) open.close()
      if (received.ended) break
    }
    if (!state.stopped) follower.resumes++
  }

  const loop = (async () => {
    while (!state.stopped) {
      try {
        await (kind === 'poll' ? poll : stream)(urls[at])
      } catch {
        await moveOn() // the instance is gone (refused, reset): the next one, from the last cursor
      }
    }
  })()
  return follower
}

/** A write as the test sent it, and what came of it: 2xx acknowledged, any other answer refused, no answer unknown. */
export interface Write {
  id: string
  type: 'plant.created' | 'plant.updated' | 'plant.deleted'
  name: string | undefined
  outcome: 'acknowledged' | 'refused' | 'unknown'
  url: string
}

// Ids of three kinds: odd ones above 2^53 (no double holds them), ones just below int64's maximum, small ones.
function plantId (index: number): string {
  if (index % 3 === 0) return String(2n ** 53n + 1n + 2n * BigInt(index))
  if (index % 3 === 1) return String(2n ** 63n - 1n - BigInt(index))
  return String(index + 1)
}

/**
 * Writes `plants` plants with `concurrency` plants in flight, each plant's writes one after another,
 * each to the next instance of `live` in turn: a create; for some a second create of the id (refused
 * 409), an update, a delete, an update after the delete (refused 404). An instance that does not
 * answer is dropped from `live`, and its plant's chain ends there (that write's outcome unknown).
 * `writes` fills as answers come, in the order acknowledged. Plants are numbered from `first` (their ids from the number).
 */
export function writePlants (live: string[], token: string, plants: number, { concurrency = 8, first = 0 } = {}) {
  const writes: Write[] = []
  let turn = 0
  const send = async (id: string, type: Write['type'], method: string, name?: string, body?: string): Promise<Write['outcome']> => {
    const url = live[turn++ % live.length]
    const headers: Record<string, string> = { authorization: `Bearer ${token}` }
    if (body !== undefined) headers['content-type'] = 'application/json'
    const path = method === 'POST' ? '/plants' : `/plants/${id}`
    let outcome: Write['outcome']
    try {
      const response = await fetch(`${url}${path}`, { method, headers, body })
      await response.text()
      outcome = response.status < 300 ? 'acknowledged' : 'refused'
    } catch {
      outcome = 'unknown'
      if (live.length > 1 && live.includes(url)) live.splice(live.indexOf(url), 1)
    }
    writes.push({ id, type, name, outcome, url })
    return outcome
  }
  const chain = async (index: number) => {
    const id = plantId(index)
    const steps: Array<() => Promise<Write['outcome']>> = [() => send(id, 'plant.created', 'POST', `p${index}`, plantBody(id, `p${index}`))]
    if (index % 4 === 0) steps.push(() => send(id, 'plant.created', 'POST', 'twice', plantBody(id, 'twice')))
    if (index % 2 === 0) steps.push(() => send(id, 'plant.updated', 'PUT', `p${index} renamed`, JSON.stringify({ name: `p${index} renamed` })))
    if (index % 3 === 0) steps.push(() => send(id, 'plant.deleted', 'DELETE'))
    if (index % 6 === 0) steps.push(() => send(id, 'plant.updated', 'PUT', 'after delete', JSON.stringify({ name: 'after delete' })))
    for (const step of steps) if (await step() === 'unknown') return
  }
  let next = first
  const done = Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < first + plants) await chain(next++)
  })).then(() => writes)
  return { writes, done }
}

const key = ({ type, name }: { type: string, name: string | undefined }) => `${type}${type === 'plant.deleted' ? '' : ` ${name}`}`

/**
 * Asserts that `changes` hold every acknowledged write once, each plant's in the order acknowledged,
 * nothing for a refused write, and at most once a write whose answer never came (the last of its
 * plant's); and that no cursor repeats.
 */
export function assertExactlyOnce (t: Test, label: string, changes: Change[], writes: Write[]): void {
  const expected = new Map<string, string[]>()
  const maybe = new Map<string, string>()
  for (const write of writes) {
    if (write.outcome === 'acknowledged') (expected.get(write.id) ?? expected.set(write.id, []).get(write.id)!).push(key(write))
    if (write.outcome === 'unknown') maybe.set(write.id, key(write))
  }
  const seen = new Map<string, string[]>()
  for (const change of changes) (seen.get(change.id) ?? seen.set(change.id, []).get(change.id)!).push(key(change))
  const wrong: Array<{ id: string, expected: string[], seen: string[] }> = []
  for (const id of new Set([...expected.keys(), ...seen.keys(), ...maybe.keys()])) {
    const want = expected.get(id) ?? []
    const got = seen.get(id) ?? []
    const extra = maybe.get(id)
    const same = (a: string[], b: string[]) => a.length === b.length && a.every((each, index) => each === b[index])
    if (!same(got, want) && !(extra !== undefined && same(got, [...want, extra]))) wrong.push({ id, expected: want, seen: got })
  }
  t.same(wrong.slice(0, 10), [], `${label}: every acknowledged write once, each plant's in order, none refused (${wrong.length} plants wrong)`)
  t.equal(new Set(changes.map(({ cursor }) => cursor)).size, changes.length, `${label}: no cursor twice (${changes.length} changes)`)
}

/** The changes a persisted follower wrote to `file`, a JSON line each (the id a decimal string, exact). */
export function persistedChanges (file: string): Change[] {
  if (!existsSync(file)) return []
  return readFileSync(file, 'utf8').split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as Change)
}

// Run as a child: a follower that appends each change to its file as it processes it, and on a
// start resumes after the last cursor the file holds. It runs until it is killed.
if (process.argv[1] === FOLLOWER_ENTRY) {
  const [kind, url, token, file] = process.argv.slice(2)
  const after = persistedChanges(file).at(-1)?.cursor
  follow(kind as 'poll' | 'stream', [url], token, {
    after,
    onChange: (change) => appendFileSync(file, `${JSON.stringify(change)}\n`)
  })
  process.stdout.write(`following after ${after ?? 'the oldest'}\n`)
}
