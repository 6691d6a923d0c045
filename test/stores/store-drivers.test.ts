import t from 'tap'
import { loadDriver, StoreOpenError } from '../../plugins/store/index.js'

t.test('a store driver that is not installed is an open error naming the package to install', async (t) => {
  const error = await loadDriver('no-such-driver', () => import('no-such-driver' as string)).catch((error: Error) => error)
  t.type(error, StoreOpenError)
  t.equal((error as Error).message, 'no-such-driver is not installed: npm install no-such-driver')
})

t.test('any other failure to load a store module is passed on as it is', async (t) => {
  const failure = new Error('the module threw while loading')
  await t.rejects(loadDriver('pg', () => Promise.reject(failure)), failure)
  const otherMissing = new Error("Cannot find package 'something-else' imported from /app/index.js")
  await t.rejects(loadDriver('pg', () => Promise.reject(otherMissing)), otherMissing)
})

t.test('an installed driver loads', async (t) => {
  const module = await loadDriver('pg', () => import('../../plugins/store/postgres/store.js'))
  t.type(module.openPostgresStore, 'function')
})
