/**
 * A PostgreSQL table the service does not fully own: someone else's trigger, rule, row-level
 * security policy or unique index on it, or a search_path that puts another table of that name
 * first. Refused at start; found later, 503 with /readyz 503 and one log line; never a 500, never
 * a 409 for an id that was not taken, never a 200 for a row stored under another id or not at all.
 * A real PostgreSQL, a role of the store's own that owns nothing.
 */
import t from 'tap'
import { buildApp } from '../../service/app.js'
import { AUTH, JSON_TYPE, TOKEN, type App } from '../helpers/app.js'
import { assertRefusedOnceBroken, ownedByAnotherRole, getPlant, readiness, servedWithTableLog } from '../helpers/postgres-table.js'
import { postgresSkip, sqlOn } from '../helpers/postgres.js'

const pgSkip = await postgresSkip()
// Every create has the same name: a unique index on name refuses all but the first.
const post = (app: App, id: number | string) => app.inject({
  method: 'POST', url: '/plants', headers: { ...AUTH, ...JSON_TYPE }, payload: `{"id":${id},"name":"same name"}`
})

interface Member {
  label: string
  /** What the table's owner does to it ({role}: the store's role). */
  sql: string
  /** What the log line (and the start-up refusal) says. */
  says: RegExp
}

const routeToChild = `CREATE TABLE plants_child () INHERITS (plants);
  CREATE FUNCTION route() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO plants_child VALUES (NEW.*); RETURN NULL; END $$;
  GRANT INSERT, SELECT ON plants_child TO {role};
  CREATE TRIGGER route BEFORE INSERT ON plants FOR EACH ROW EXECUTE FUNCTION route()`
const MEMBERS: Member[] = [
  { label: 'a BEFORE INSERT trigger routing rows to a child table', sql: routeToChild, says: /it has triggers \(route\)/ },
  {
    label: 'a BEFORE INSERT trigger rewriting the id',
    sql: `CREATE FUNCTION shift() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.id := NEW.id + 1000000; RETURN NEW; END $$;
      CREATE TRIGGER shift BEFORE INSERT ON plants FOR EACH ROW EXECUTE FUNCTION shift()`,
    says: /it has triggers \(shift\)/
  },
  {
    label: 'a trigger that raises',
    sql: `CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'no new plants'; END $$;
      CREATE TRIGGER refuse BEFORE INSERT ON plants FOR EACH ROW EXECUTE FUNCTION refuse()`,
    says: /it has triggers \(refuse\)/
  },
  { label: 'a unique index on name', sql: 'CREATE UNIQUE INDEX plants_name ON plants (name)', says: /it has unique indexes of its own \(plants_name\)/ },
  {
    label: 'a row-level security policy',
    sql: 'ALTER TABLE plants ENABLE ROW LEVEL SECURITY; CREATE POLICY small_ids ON plants USING (true) WITH CHECK (id < 0)',
    says: /row-level security is on for it \(policies: small_ids\)/
  },
  { label: 'a DO INSTEAD NOTHING rule', sql: 'CREATE RULE ignore_inserts AS ON INSERT TO plants DO INSTEAD NOTHING', says: /it has rules \(ignore_inserts\)/ }
]

for (const member of MEMBERS) {
  t.test(`${member.label}, made under the running service: no 500, no false 409, no false 200; then 503 and /readyz 503`, { skip: pgSkip }, async (t) => {
    const { admin, role, url } = await ownedByAnotherRole(t)
    const { app, tableLines } = await servedWithTableLog(t, url)
    t.equal((await post(app, 1)).statusCode, 200, 'a create before')
    t.equal((await readiness(app)).statusCode, 200, '/readyz 200 before')

    await sqlOn(admin, member.sql.replaceAll('{role}', role))
    await assertRefusedOnceBroken(t, app, admin, post)
    t.match(tableLines(), [member.says], 'one log line says what is wrong with the table')
  })

  t.test(`${member.label}, there at start: refused, naming what is wrong`, { skip: pgSkip }, async (t) => {
    const { admin, role, url } = await ownedByAnotherRole(t)
    await sqlOn(admin, member.sql.replaceAll('{role}', role))
    await t.rejects(buildApp({ tokens: [TOKEN], store: url }), { message: member.says })
  })
}

t.test('a search_path that puts another plants table first: the store keeps to its own table', { skip: pgSkip }, async (t) => {
  const { admin, role, url } = await ownedByAnotherRole(t)
  const { app } = await servedWithTableLog(t, url)
  t.equal((await post(app, 1)).statusCode, 200, 'plant 1 created')
  await sqlOn(admin, `CREATE SCHEMA other; CREATE TABLE other.plants (id int8 PRIMARY KEY, name text NOT NULL, tag text);
    GRANT USAGE ON SCHEMA other TO ${role}; GRANT SELECT, INSERT, DELETE ON other.plants TO ${role};
    ALTER ROLE ${role} IN DATABASE ${new URL(admin).pathname.slice(1)} SET search_path = other, public`)
  // Sessions opened from now on have the new search_path: end the store's current ones.
  await sqlOn(admin, 'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1', [role])
  let ready = 0
  for (let tries = 0; tries < 50 && ready !== 200; tries++) ready = (await readiness(app)).statusCode
  t.equal(ready, 200, '/readyz 200: the store\'s own table is fine')
  t.equal((await post(app, 1)).statusCode, 409, 'plant 1 again: 409, it is taken')
  t.equal((await getPlant(app, 1)).statusCode, 200, 'plant 1 is still read')
  t.equal((await post(app, 2)).statusCode, 200, 'a new plant')
  t.strictSame(await sqlOn(admin, 'SELECT id::text FROM other.plants'), [], 'nothing went into the other table')
  t.strictSame(await sqlOn(admin, 'SELECT id::text FROM public.plants ORDER BY id'), [{ id: '1' }, { id: '2' }], 'both are in the store\'s table')
})
