import { join } from 'node:path'
import t from 'tap'
import { assertEventsSurviveSigkill } from '../../helpers/webhook-crash.js'

t.test('SQLite: kill -9 five times during a create load: no acknowledged create without its event', async (t) => {
  await assertEventsSurviveSigkill(t, `sqlite:${join(t.testdir({}), 'plants.db')}`)
})
