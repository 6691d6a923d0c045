/**
 * Load shedding when the event loop is blocked through a whole sample. In a file of its own: the
 * blocked loop would hold up the timers of any test running beside it in the same process.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { meanLoopDelay } from '../../plugins/http/load-shedding.js'
import { assertCreateShed, buildPlugin, createPlant, storedPlants } from '../helpers/plugin-app.js'

t.test('a sample with no delay measured at all (the loop blocked throughout) is the worst delay, not none', async (t) => {
  t.equal(meanLoopDelay({ mean: Number.NaN }), Infinity)
  t.equal(meanLoopDelay({ mean: 30e6 }), 20, 'otherwise the mean, less the histogram\'s own 10 ms timer')
})

t.test('a loop blocked for longer than a sample, in one block: plant requests shed with 503, nothing stored', async (t) => {
  const { app, store } = await buildPlugin(t, { pressure: { maxEventLoopDelay: 20, retryAfter: 3 } })
  const until = Date.now() + 1200
  while (Date.now() < until);
  await sleep(50)
  await assertCreateShed(t, app, store, 3)
})

t.test('the app\'s own start-up is not load: a loop blocked while it starts sheds none of its first requests', async (t) => {
  // A host whose start-up, after the plugin's registration, blocks the loop for longer than a sample.
  const { app, store } = await buildPlugin(t, { pressure: { maxEventLoopDelay: 20, retryAfter: 3 } }, {}, async (host) => {
    await host.register(async function slowStart () {
      const until = Date.now() + 1200
      while (Date.now() < until);
    })
  })
  // The timers due after the block run first: a sample taken during start-up would be the worst there is.
  await sleep(1)
  for (let id = 1; id <= 30; id++) t.equal((await createPlant(app, { id, name: 'n' })).statusCode, 200, `request ${id} of the first 30 answered`)
  t.equal((await storedPlants(store)).length, 30)
})
