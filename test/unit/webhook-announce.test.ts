/**
 * The listener of PostgreSQL announcements (plugins/store/postgres/announce.ts) on sessions of the
 * test's own making: a connection refused, a session check answered or not, a session ended, a
 * stop while it waits to try again. The same on a real server, against its real timing:
 * system/processes/webhook-announce-sessions.test.ts.
 */
import { EventEmitter } from 'node:events'
import type pg from 'pg'
import t from 'tap'
import { listen } from '../../plugins/store/postgres/announce.js'
import { eventually } from '../helpers/webhooks.js'

const CHANNEL = 'plant_store_webhooks_test'

/** A session that answers its statements as `answer` says; what it was asked, and whether it was given back destroyed. */
function session (answer: (text: string) => Promise<unknown> = async () => ({})) {
  const client = Object.assign(new EventEmitter(), {
    asked: [] as string[],
    released: [] as boolean[],
    query (config: { text: string }) {
      client.asked.push(config.text)
      return answer(config.text)
    },
    release (destroy: boolean) { client.released.push(destroy) }
  })
  return client
}

type Session = ReturnType<typeof session>

/** A connect that hands out `sessions` in turn (a function: a refusal), then refuses; the calls counted. */
function connector (...sessions: Array<Session | (() => never)>) {
  let calls = 0
  const connect = async () => {
    const next = sessions[calls++]
    if (next === undefined || typeof next === 'function') throw new Error('connection refused')
    return next as unknown as pg.PoolClient
  }
  return { connect, calls: () => calls }
}

const refused = () => { throw new Error('connection refused') }

t.test('a connection refused is tried again; once connected, it listens, and hears its own channel only', async (t) => {
  const held = session()
  const { connect, calls } = connector(refused, held)
  let heard = 0
  const stop = listen(connect, CHANNEL, () => { heard++ }, { checkMs: 60_000, answerMs: 1000 })
  t.teardown(stop)
  t.ok(await eventually(() => heard === 1), 'listening after its second try')
  t.equal(calls(), 2)
  t.same(held.asked, [`LISTEN "${CHANNEL}"`])
  held.emit('notification', { channel: 'another' })
  held.emit('notification', { channel: CHANNEL })
  t.equal(heard, 2, 'its channel heard, another not')
})

t.test('a session that answers its checks is kept; one whose check fails is given back destroyed and replaced', async (t) => {
  let answering = true
  const first = session(async (text) => {
    if (text === 'SELECT 1' && !answering) throw new Error('Query read timeout')
    return {}
  })
  const second = session()
  const { connect, calls } = connector(first, second)
  let heard = 0
  const stop = listen(connect, CHANNEL, () => { heard++ }, { checkMs: 5, answerMs: 1000 })
  t.teardown(stop)
  t.ok(await eventually(() => first.asked.filter((text) => text === 'SELECT 1').length >= 3), 'checked again and again')
  t.equal(heard, 1, 'heard once, as it started listening: kept')
  t.equal(calls(), 1, 'on its first session')
  answering = false
  t.ok(await eventually(() => heard === 2), 'listens again once a check went unanswered')
  t.same(first.released, [true], 'the silent session given back destroyed, never to another caller')
  t.equal(calls(), 2, 'on a new session')
  t.same(second.asked.slice(0, 1), [`LISTEN "${CHANNEL}"`])
})

t.test('a session that ends is replaced', async (t) => {
  const [first, second] = [session(), session()]
  const { connect } = connector(first, second)
  let heard = 0
  const stop = listen(connect, CHANNEL, () => { heard++ }, { checkMs: 60_000, answerMs: 1000 })
  t.teardown(stop)
  t.ok(await eventually(() => heard === 1))
  first.emit('end')
  t.ok(await eventually(() => heard === 2), 'listening on the next session')
  t.same(first.released, [true])
})

t.test('stopped while it waits to try again, it stops at once and tries no more', async (t) => {
  const { connect, calls } = connector()
  const stop = listen(connect, CHANNEL, () => { t.fail('never listens') }, { checkMs: 60_000, answerMs: 1000 })
  t.ok(await eventually(() => calls() === 1), 'refused once')
  await stop()
  t.equal(calls(), 1, 'no second try')
})

t.test('stopped while it listens, its session is given back destroyed', async (t) => {
  const held = session()
  const { connect } = connector(held)
  let heard = 0
  const stop = listen(connect, CHANNEL, () => { heard++ }, { checkMs: 60_000, answerMs: 1000 })
  t.ok(await eventually(() => heard === 1))
  await stop()
  t.same(held.released, [true])
})
