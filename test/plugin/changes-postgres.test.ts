/**
 * The feed on PostgreSQL with two plugin instances on one database: a long-poll on one is woken by
 * a create on the other (its NOTIFY), and both read one feed (the same cursors).
 */
import t from 'tap'
import { AUTH, buildPlugin, createPlant } from '../helpers/plugin-app.js'
import { freshDatabase, postgresSkip } from '../helpers/postgres.js'

interface Page { changes: Array<{ cursor: string, event: { id: number, type: string } }>, next: string }

t.test('a long-poll on one instance answers a create committed on another; both give the same cursors', { skip: await postgresSkip() }, async (t) => {
  const url = await freshDatabase(t)
  const { app: first } = await buildPlugin(t, { store: url })
  const { app: second } = await buildPlugin(t, { store: url })
  const { next } = (await first.inject({ url: '/plants/changes?after=now', headers: AUTH })).json<Page>()
  const waiting = first.inject({ url: `/plants/changes?after=${next}&wait=30`, headers: AUTH })
  // Its wait (and the listening it starts) under way before the create.
  await new Promise((resolve) => setTimeout(resolve, 50))
  t.equal((await createPlant(second, '{"id":9007199254740993,"name":"Agave"}')).statusCode, 200)
  const page = (await waiting).json<Page>()
  t.match((await waiting).body, /"id":9007199254740993,/, 'woken, the id exact')
  t.same(page.changes.map(({ event }) => event.type), ['plant.created'])
  t.same((await second.inject({ url: `/plants/changes?after=${next}`, headers: AUTH })).json<Page>(), page, 'the other instance reads the same feed')
})
