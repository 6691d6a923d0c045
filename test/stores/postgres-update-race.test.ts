/**
 * Two service instances on one PostgreSQL database, each with its own pool, racing PUTs that hold
 * one ETag: in every round exactly one is answered 200 and the other 412, and the plant is the
 * winner's, at the winner's ETag.
 */
import t from 'tap'
import { buildApp } from '../../service/app.js'
import { AUTH, JSON_TYPE, TOKEN } from '../helpers/app.js'
import { freshDatabase, postgresSkip } from '../helpers/postgres.js'

const ROUNDS = 100

t.test(`two instances, ${ROUNDS} rounds of PUTs with one If-Match: exactly one 200 a round`, { skip: await postgresSkip() }, async (t) => {
  const url = await freshDatabase(t)
  const apps = [await buildApp({ tokens: [TOKEN], store: url }), await buildApp({ tokens: [TOKEN], store: url })]
  t.teardown(() => Promise.all(apps.map((app) => app.close())))
  await Promise.all(apps.map((app) => app.ready()))
  const headers = { ...AUTH, ...JSON_TYPE }
  let etag = (await apps[0].inject({ method: 'POST', url: '/plants', headers, payload: '{"id":1,"name":"start"}' })).headers.etag as string
  const tally = { 200: 0, 412: 0 }
  for (let round = 0; round < ROUNDS; round++) {
    const answers = await Promise.all(apps.map((app, index) => app.inject({
      method: 'PUT', url: '/plants/1', headers: { ...headers, 'if-match': etag }, payload: JSON.stringify({ name: `round ${round} instance ${index}` })
    })))
    const statuses = answers.map(({ statusCode }) => statusCode).sort()
    if (statuses[0] !== 200 || statuses[1] !== 412) {
      t.fail(`round ${round}: ${statuses.join(', ')}`)
      break
    }
    const winner = answers.findIndex(({ statusCode }) => statusCode === 200)
    tally[200]++
    tally[412]++
    etag = answers[winner].headers.etag as string
    // Read through the other instance: the winner's plant, at the winner's ETag.
    const read = await apps[1 - winner].inject({ url: '/plants/1', headers: AUTH })
    if (read.body !== `{"name":"round ${round} instance ${winner}"}` || read.headers.etag !== etag) {
      t.fail(`round ${round}: read ${read.body} at ${String(read.headers.etag)}, the winner's ETag ${etag}`)
      break
    }
  }
  t.same(tally, { 200: ROUNDS, 412: ROUNDS }, 'one winner and one 412 in every round')
})
