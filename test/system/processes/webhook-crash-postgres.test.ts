import t from 'tap'
import { freshDatabase, postgresSkip } from '../../helpers/postgres.js'
import { assertEventsSurviveSigkill } from '../../helpers/webhook-crash.js'

const pgSkip = await postgresSkip()

t.test('PostgreSQL: kill -9 five times during a create load: no acknowledged create without its event', { skip: pgSkip }, async (t) => {
  await assertEventsSurviveSigkill(t, await freshDatabase(t))
})
