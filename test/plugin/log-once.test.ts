import t from 'tap'
import { StoreUnavailableError } from '../../plugins/http/errors.js'
import { createMemoryStore } from '../../plugins/store/memory/store.js'
import { buildPlugin, collectLogs, createPlant } from '../helpers/plugin-app.js'

const PHRASE = 'The plant store is unavailable, try again later'
const occurrences = (text: string) => text.split(PHRASE).length - 1

t.test('a 503 warning says "unavailable" once, then why', async (t) => {
  for (const [label, failure] of [
    ['a store error with a cause', new StoreUnavailableError({ cause: new Error('the disk is gone') })],
    ['a store error without one', new StoreUnavailableError()]
  ] as const) {
    const { lines, logger } = collectLogs('warn')
    const store = { ...createMemoryStore(), create: async () => { throw failure }, ping: async () => { throw failure } }
    const { app } = await buildPlugin(t, { store }, { logger })
    t.equal((await createPlant(app, { id: 1, name: 'fern' })).statusCode, 503, `${label}: a create answers 503`)
    t.equal((await app.inject('/readyz')).statusCode, 503, `${label}: /readyz answers 503`)
    const messages = lines.filter(({ level }) => level === 40).map(({ reason }) => reason as string)
    t.equal(messages.length, 2, `${label}: one warning for the create, one for readiness (at start)`)
    for (const message of messages) t.equal(occurrences(message), 1, `${label}: "${message}"`)
    if (failure.cause) t.ok(messages.every((message) => message.endsWith(': the disk is gone')), `${label}: the cause follows`)
  }
})
