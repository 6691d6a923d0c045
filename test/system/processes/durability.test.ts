import { join } from 'node:path'
import t from 'tap'
import { assertCreatesSurviveSigkill } from '../../helpers/load.js'

t.test('every acknowledged create survives a SIGKILL right after the last 200', async (t) => {
  await assertCreatesSurviveSigkill(t, `sqlite:${join(t.testdir({}), 'plants.db')}`, { total: 300, concurrency: 16 })
})
