/**
 * Property-based fuzzing of the whole app through app.inject(), with fast-check: hostile JSON bodies,
 * near-valid plants with one field mutated, broken JSON, odd sizes and nesting, odd content types,
 * malformed Authorization headers, odd paths, methods and query strings.
 *
 * Every generated request must satisfy, whatever it is:
 * - never a 5xx, and the status is one CONTRACT.md documents;
 * - at >= 400, the body is JSON of exactly `{ error: <the status>, message: <non-empty string> }`,
 *   without a stack or a file path, and a 401 carries the Bearer challenge;
 * - at >= 400, the store is unchanged; only a 200 to POST /plants or a 204 to DELETE changes it;
 * - a 200 to POST /plants stored exactly the plant sent (id exact, name and tag as sent) and nothing
 *   else, and answered that plant without its id.
 * Where a case's fate is known (a valid plant, a body that is not JSON, a wrong token), the exact
 * status is checked too.
 *
 * Runs: FUZZ_RUNS is the total number of generated cases over all properties (default 1500, about
 * 5 s), split by SHARES below, each share rounded up, so a run has at least FUZZ_RUNS cases:
 *   hostile JSON 15%, near-valid plants 30%, broken JSON 10%, sizes and nesting 5%,
 *   content types 10%, authorization 12%, paths and methods 18%.
 * The full run is FUZZ_RUNS=10000: 1500 + 3000 + 1000 + 500 + 1000 + 1200 + 1800 = 10,000 cases.
 * FUZZ_SEED fixes the seed of every property (otherwise each run draws a new one); a failure prints
 * fast-check's report (seed, path, counterexample), which FUZZ_SEED reproduces.
 *
 * One app per property; the store is reset to SEEDS after any case that changed it. Load shedding
 * is off (an event-loop stall on a busy machine is not an input) and the per-token rate limit is on
 * with a limit no run reaches, so that its code runs on every authenticated request.
 */
import { METHODS } from 'node:http'
import fc from 'fast-check'
import type { InjectOptions, LightMyRequestResponse } from 'fastify'
import t, { type Test } from 'tap'
import type { PlantStore } from '../../plugins/store/types.js'
import { AUTH, OTHER_TOKEN, TOKEN, build, storedPlants, type App } from '../helpers/app.js'

// ---------------------------------------------------------------------------------------------
// Configuration

function positiveInteger (name: string, fallback: number): number {
  const raw = process.env[name]
  if (raw === undefined || raw === '') return fallback
  const value = Number(raw)
  if (!Number.isSafeInteger(value) || value < 1) throw new Error(`${name} must be a positive integer, got ${raw}`)
  return value
}

const TOTAL_RUNS = positiveInteger('FUZZ_RUNS', 1500)
function optionalSeed (): number | undefined {
  const raw = process.env.FUZZ_SEED
  if (raw === undefined || raw === '') return undefined
  const seed = Number(raw)
  if (!Number.isSafeInteger(seed)) throw new Error(`FUZZ_SEED must be an integer, got ${raw}`)
  return seed | 0
}

const SEED = optionalSeed()

const SHARES = {
  'hostile JSON bodies': 0.15,
  'near-valid plants with one field mutated': 0.30,
  'broken JSON': 0.10,
  'sizes and nesting': 0.05,
  'content types': 0.10,
  authorization: 0.12,
  'paths, methods and query strings': 0.18
} as const
type PropertyName = keyof typeof SHARES

const runsFor = (name: PropertyName) => Math.max(1, Math.ceil(TOTAL_RUNS * SHARES[name]))

// Statuses CONTRACT.md documents for any route.
const DOCUMENTED = new Set([200, 204, 400, 401, 404, 405, 409, 413, 415, 429, 503])
const CHALLENGE = /^Bearer realm="plant-store"(, error="invalid_token")?$/
const BODY_LIMIT = 1024 * 1024
const MAX_TEXT_LENGTH = 1000 // README: the longest name or tag, in characters (code points)
const INT64_MIN = -(2n ** 63n)
const INT64_MAX = 2n ** 63n - 1n

// ---------------------------------------------------------------------------------------------
// The model: plants, the seeded store, what a case expects

interface Plant { id: bigint, name: string, tag?: string }

const SEEDS: readonly Plant[] = [
  { id: 0n, name: 'seed zero' },
  { id: 1n, name: 'seed fern' },
  { id: 2n, name: 'seed moss', tag: 'green' },
  { id: INT64_MAX, name: 'seed max', tag: '' },
  { id: INT64_MIN, name: 'seed min' }
]
const SEED_IDS = new Set(SEEDS.map((plant) => plant.id))

/** 200, or 409 when the id is a seeded one (the store is reset to SEEDS before each case). */
const createdStatus = (plant: Plant) => SEED_IDS.has(plant.id) ? 409 : 200

interface Case {
  /** A short account of what was generated, for the failure report. */
  label: string
  method: InjectOptions['method']
  url: string
  headers?: Record<string, string | string[]>
  payload?: string | Buffer
  /** The statuses this case may get (default: any documented one). */
  expect?: readonly number[]
  /** For POST /plants: the plant a 200 must store; absent when the body is not a valid plant. */
  plant?: Plant
  /** A 401 must carry error="invalid_token" (true), must not (false), or either (undefined). */
  invalidToken?: boolean
}

// ---------------------------------------------------------------------------------------------
// Oracles, written independently of the service's code

/** The int64 a JSON number literal spells exactly (1.0, 1e3, -0 included), or undefined. */
function exactInt64 (literal: string): bigint | undefined {
  const match = /^(-?)(0|[1-9]\d*)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(literal)
  if (match === null) return undefined
  const [, sign, whole, fraction = '', exponent = '0'] = match
  let mantissa = BigInt(whole + fraction)
  if (mantissa === 0n) return 0n
  let power = BigInt(exponent) - BigInt(fraction.length) // the value is mantissa * 10^power
  while (mantissa % 10n === 0n) {
    mantissa /= 10n
    power += 1n
  }
  if (power < 0n || power > 19n) return undefined // a fraction is left, or |value| >= 10^19
  const value = (sign === '-' ? -1n : 1n) * mantissa * 10n ** power
  return value >= INT64_MIN && value <= INT64_MAX ? value : undefined
}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/
const LONE_SURROGATES = new RegExp(LONE_SURROGATE.source, 'g')

/** Text every store keeps exactly: no U+0000, no unpaired surrogate; and not longer than the maximum. */
const isStorable = (text: string) =>
  !text.includes('\u0000') && !LONE_SURROGATE.test(text) && [...text].length <= MAX_TEXT_LENGTH
const storable = (text: string) => text.replaceAll('\u0000', '0').replace(LONE_SURROGATES, '\ufffd')

type Json = null | boolean | number | string | Json[] | { [key: string]: Json }

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/** A __proto__ key, or a constructor holding a prototype key, anywhere in the value. */
function isPoisoned (value: unknown): boolean {
  if (Array.isArray(value)) return value.some(isPoisoned)
  if (!isObject(value)) return false
  if (Object.hasOwn(value, '__proto__')) return true
  if (Object.hasOwn(value, 'constructor') && isObject(value.constructor) && Object.hasOwn(value.constructor, 'prototype')) {
    return true
  }
  return Object.values(value).some(isPoisoned)
}

/** The plant a body (the JSON.stringify of `value`) stands for, or undefined when it is not one. */
function plantOf (value: unknown): Plant | undefined {
  if (!isObject(value) || isPoisoned(value)) return undefined
  const { id, name, tag } = value
  if (typeof id !== 'number' || typeof name !== 'string' || !isStorable(name)) return undefined
  if (tag !== undefined && (typeof tag !== 'string' || !isStorable(tag))) return undefined
  const exact = exactInt64(JSON.stringify(id))
  if (exact === undefined) return undefined
  return tag === undefined ? { id: exact, name } : { id: exact, name, tag }
}

/** What a body may get: its plant's success, or 400 when it is not a valid plant. */
const outcome = (plant: Plant | undefined) => plant === undefined ? [400] : [createdStatus(plant)]

// ---------------------------------------------------------------------------------------------
// Running a case against the app and checking every property

const keyOf = (plant: Plant) =>
  `${plant.id} ${JSON.stringify(plant.name)} ${plant.tag === undefined ? '-' : JSON.stringify(plant.tag)}`
const SEED_SNAPSHOT = SEEDS.map(keyOf).sort().join('\n')

const preview = (value: string | Buffer | undefined, max = 300) => {
  if (value === undefined) return 'none'
  const text = Buffer.isBuffer(value) ? `Buffer(${value.length}) ${JSON.stringify(value.subarray(0, max).toString('latin1'))}` : JSON.stringify(value.slice(0, max))
  return value.length > max ? `${text}... (${value.length})` : text
}

class Target {
  cases = 0

  private constructor (readonly app: App, readonly store: PlantStore) {}

  static async start (t: Test): Promise<Target> {
    const { app, store } = await build(t, {
      pressure: {},
      rateLimit: { max: 1_000_000_000, timeWindow: 60_000 },
      // Wrong tokens are an input here: thousands of them from one address must each get their 401.
      authFailureLimit: false
    })
    const target = new Target(app, store)
    await target.reset()
    return target
  }

  async snapshot (): Promise<Plant[]> {
    return storedPlants(this.store) as Promise<Plant[]>
  }

  /** Puts the store back to SEEDS. */
  async reset () {
    const seeds = new Set(SEEDS.map(keyOf))
    for (const plant of await this.snapshot()) {
      if (!seeds.has(keyOf(plant))) await this.store.delete(plant.id)
    }
    for (const seed of SEEDS) {
      if (await this.store.get(seed.id) === undefined) await this.store.create(seed)
    }
  }

  /** Sends the case and throws, with an account of the case and the answer, if a property fails. */
  async run (c: Case): Promise<void> {
    const before = await this.snapshot()
    let response: LightMyRequestResponse
    try {
      response = await this.app.inject({ method: c.method, url: c.url, headers: c.headers, payload: c.payload })
    } finally {
      this.cases++
    }
    const after = await this.snapshot()
    const problems = check(c, response, before, after)
    if (after.map(keyOf).sort().join('\n') !== SEED_SNAPSHOT) await this.reset()
    if (problems.length > 0) {
      throw new Error(`${problems.join('; ')}\n` +
        `  case: ${c.label}\n  request: ${c.method} ${preview(c.url)} headers ${preview(JSON.stringify(c.headers ?? {}))} ` +
        `payload ${preview(c.payload)}\n  answer: ${response.statusCode} ${JSON.stringify(response.headers['content-type'])} ` +
        `${preview(response.payload)}`)
    }
  }
}

function check (c: Case, response: LightMyRequestResponse, before: Plant[], after: Plant[]): string[] {
  const problems: string[] = []
  const status = response.statusCode
  if (status >= 500) problems.push(`a ${status}`)
  if (!DOCUMENTED.has(status)) problems.push(`${status} is not a documented status`)
  if (status === 405) {
    const allow = response.headers.allow
    if (typeof allow !== 'string' || allow.split(', ').includes(String(c.method))) problems.push(`405 with Allow ${JSON.stringify(response.headers.allow)} for ${c.method}`)
  }
  if (c.expect !== undefined && !c.expect.includes(status)) problems.push(`${status}, expected ${c.expect.join(' or ')}`)

  if (status >= 400) {
    if (!/^application\/json/.test(String(response.headers['content-type']))) {
      problems.push(`error content type ${response.headers['content-type']}`)
    }
    if (c.method !== 'HEAD') problems.push(...errorShapeProblems(status, response.payload))
    if (status === 401) {
      const challenge = response.headers['www-authenticate']
      if (typeof challenge !== 'string' || !CHALLENGE.test(challenge)) {
        problems.push(`401 without the Bearer challenge: ${JSON.stringify(challenge)}`)
      } else if (c.invalidToken !== undefined && challenge.includes('invalid_token') !== c.invalidToken) {
        problems.push(`401 challenge ${JSON.stringify(challenge)}: error="invalid_token" expected ${c.invalidToken ? '' : 'not '}to be there`)
      }
    }
  }

  // Only a 200 to POST /plants, a 200 to PUT (one plant's name and tag) and a 204 to DELETE may change the store.
  const beforeKeys = new Set(before.map(keyOf))
  const afterKeys = new Set(after.map(keyOf))
  const added = after.filter((plant) => !beforeKeys.has(keyOf(plant)))
  const removed = before.filter((plant) => !afterKeys.has(keyOf(plant)))
  const path = c.url.split(/[?#]/, 1)[0]
  // POST /plants is the only POST route, however its path is spelled.
  const created = c.method === 'POST' && status === 200
  const deleted = c.method === 'DELETE' && status === 204
  if (created) {
    if (c.plant === undefined) {
      problems.push('accepted a body that is not a valid plant')
    } else if (added.length !== 1 || removed.length !== 0 || keyOf(added[0]) !== keyOf(c.plant)) {
      problems.push(`stored ${added.map(keyOf).join(', ') || 'nothing'} (removed ${removed.length}), sent ${keyOf(c.plant)}`)
    } else {
      const echoed = JSON.stringify(c.plant.tag === undefined ? { name: c.plant.name } : { name: c.plant.name, tag: c.plant.tag })
      if (response.payload !== echoed) problems.push(`answered ${preview(response.payload)}, the plant sent is ${echoed}`)
    }
  } else if (c.method === 'PUT' && status === 200) {
    const same = added.length === removed.length && added.every((plant, index) => plant.id === removed[index].id)
    const asSent = c.plant === undefined || added.every((plant) => plant.name === c.plant!.name && plant.tag === c.plant!.tag)
    if (added.length > 1 || !same || !asSent) problems.push(`a 200 PUT replaced ${removed.map(keyOf).join(', ') || 'nothing'} with ${added.map(keyOf).join(', ') || 'nothing'}`)
  } else if (deleted) {
    if (added.length !== 0 || removed.length !== 1) problems.push(`a 204 DELETE added ${added.length} and removed ${removed.length}`)
  } else if (added.length !== 0 || removed.length !== 0) {
    problems.push(`a ${status} to ${c.method} changed the store: added ${added.map(keyOf).join(', ') || 'nothing'}, removed ${removed.map(keyOf).join(', ') || 'nothing'}`)
  }

  if (c.method === 'GET' && path === '/plants' && status === 200) {
    const ids = [...response.payload.matchAll(/"id":(-?\d+)[,}]/g)].map(([, id]) => BigInt(id))
    if (!ids.every((id, index) => index === 0 || ids[index - 1] < id)) problems.push('a list not in ascending id order')
  }
  return problems
}

function errorShapeProblems (status: number, payload: string): string[] {
  let body: unknown
  try {
    body = JSON.parse(payload)
  } catch {
    return [`a ${status} whose body is not JSON`]
  }
  if (!isObject(body)) return [`a ${status} whose body is not an object`]
  const problems: string[] = []
  const keys = Object.keys(body).sort().join(',')
  if (keys !== 'error,message') problems.push(`error body keys ${keys}`)
  if (body.error !== status) problems.push(`error ${JSON.stringify(body.error)} in a ${status}`)
  if (typeof body.message !== 'string' || body.message === '') problems.push('no message')
  else if (/\n\s+at |node_modules|\.ts:\d/.test(body.message) || body.message.includes(process.cwd())) {
    problems.push('the message leaks internals')
  }
  return problems
}

// ---------------------------------------------------------------------------------------------
// Generators: text, numbers, JSON

const ODD_CHARACTERS = [
  '\u0000', '\u0001', '\u001f', '\u007f', '\u0085', '\u00a0', '\u00e9', 'e\u0301', '\u200b', '\u200e', '\u200f',
  '\u202a', '\u202e', '\u2066', '\u2069', '\u2028', '\u2029', '\ufeff', '\ufffd', '\uffff', '\u{1f600}',
  '\u{1f469}\u200d\u{1f469}\u200d\u{1f467}', '\u{1f1eb}\u{1f1f7}', '\u{10ffff}', '\u{1d54f}', '\u0627\u0644', '\u05d0',
  '"', '\\', '/', '\n', '\r', '\t', '\b', '\f', "'", '<', '>', '&', '%', '{', '}', '[', ']', ',', ':', '\\u0000'
]
const SURROGATE_HALVES = ['\ud800', '\udbff', '\udc00', '\udfff', '\ud83d']

const oddCharacter = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...ODD_CHARACTERS) },
  { weight: 1, arbitrary: fc.constantFrom(...SURROGATE_HALVES) },
  { weight: 3, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }) },
  { weight: 3, arbitrary: fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 1 }) }
)

/** Names and tags: odd Unicode (U+0000, lone surrogates, RTL marks, emoji...), plain text, edge cases. */
const oddText = fc.oneof(
  { weight: 5, arbitrary: fc.array(oddCharacter, { maxLength: 16 }).map((parts) => parts.join('')) },
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 24 }) },
  { weight: 1, arbitrary: fc.constantFrom('', ' ', 'null', '0', '__proto__', 'constructor', 'toString', 'a'.repeat(300)) }
)
const storableText = oddText.map(storable)

/** How a JSON string is written: as JSON.stringify does, or with \u escapes. */
type StringStyle = 'plain' | 'escape-non-ascii' | 'escape-all' | 'escape-all-upper'
const stringStyle = fc.constantFrom<StringStyle>('plain', 'plain', 'escape-non-ascii', 'escape-all', 'escape-all-upper')
const hex4 = (code: number) => code.toString(16).padStart(4, '0')

function jsonString (text: string, style: StringStyle): string {
  switch (style) {
    case 'plain':
      return JSON.stringify(text)
    case 'escape-non-ascii':
      return JSON.stringify(text).replace(/[\u007f-\uffff]/g, (character) => `\\u${hex4(character.charCodeAt(0))}`)
    default: {
      let escaped = ''
      for (let index = 0; index < text.length; index++) escaped += `\\u${hex4(text.charCodeAt(index))}`
      return `"${style === 'escape-all-upper' ? escaped.replace(/\\u([0-9a-f]{4})/g, (_, code: string) => `\\u${code.toUpperCase()}`) : escaped}"`
    }
  }
}

const int64 = fc.oneof(
  { weight: 3, arbitrary: fc.bigInt({ min: INT64_MIN, max: INT64_MAX }) },
  { weight: 2, arbitrary: fc.bigInt({ min: -1000n, max: 1000n }) },
  { weight: 1, arbitrary: fc.constantFrom(...SEED_IDS, INT64_MAX - 1n, INT64_MIN + 1n, 2n ** 53n + 1n, -(2n ** 53n) - 1n, 10n ** 18n) }
)
const outOfRange = fc.oneof(
  fc.bigInt({ min: INT64_MAX + 1n, max: INT64_MAX * 4n }),
  fc.bigInt({ min: INT64_MIN * 4n, max: INT64_MIN - 1n }),
  fc.bigInt({ min: 10n ** 19n, max: 10n ** 40n }),
  fc.constantFrom(INT64_MAX + 1n, INT64_MIN - 1n, 2n ** 64n)
)

/** A way of writing an integer: where the decimal point goes, zeros moved into the exponent, case and signs. */
interface Spelling { point: number, zeros: number, e: 'e' | 'E', plus: boolean, bareExponent: boolean }
const spelling: fc.Arbitrary<Spelling> = fc.record({
  point: fc.nat({ max: 25 }),
  zeros: fc.integer({ min: -20, max: 3 }),
  e: fc.constantFrom('e', 'E'),
  plus: fc.boolean(),
  bareExponent: fc.boolean()
})
const ZERO_SPELLINGS = ['0', '-0', '0.0', '-0.0', '0e0', '-0E-0', '0.000e+2', '0e999999999', '-0.0e-999999999']

/** The integer `value` as JSON number text, in the spelling given (1.234e3, 1234000e-3, 1234.0, ...). */
function spell (value: bigint, { point, zeros, e, plus, bareExponent }: Spelling): string {
  if (value === 0n) return ZERO_SPELLINGS[point % ZERO_SPELLINGS.length]
  let digits = (value < 0n ? -value : value).toString()
  let exponent = 0
  if (zeros < 0) {
    const take = Math.min(-zeros, digits.length - digits.replace(/0+$/, '').length)
    digits = digits.slice(0, digits.length - take)
    exponent += take
  } else {
    digits += '0'.repeat(zeros)
    exponent -= zeros
  }
  let mantissa = digits
  if (point > 0) {
    mantissa = point < digits.length
      ? `${digits.slice(0, digits.length - point)}.${digits.slice(digits.length - point)}`
      : `0.${'0'.repeat(point - digits.length)}${digits}`
    exponent += point
  }
  const written = exponent === 0 && bareExponent ? '' : `${e}${exponent < 0 ? '-' : plus ? '+' : ''}${Math.abs(exponent)}`
  return `${value < 0n ? '-' : ''}${mantissa}${written}`
}

/** Any JSON number text: integers in and out of range in every spelling, fractions, doubles, extremes. */
const numberLiteral = fc.oneof(
  { weight: 3, arbitrary: fc.tuple(int64, spelling).map(([value, how]) => spell(value, how)) },
  { weight: 2, arbitrary: fc.tuple(outOfRange, spelling).map(([value, how]) => spell(value, how)) },
  {
    weight: 2,
    arbitrary: fc.tuple(
      fc.constantFrom('', '-'),
      fc.oneof(fc.constant('0'), fc.stringMatching(/^[1-9][0-9]{0,24}$/)),
      fc.option(fc.stringMatching(/^[0-9]{1,24}$/), { nil: undefined }),
      fc.option(fc.tuple(fc.constantFrom('e', 'E'), fc.constantFrom('', '+', '-'), fc.stringMatching(/^[0-9]{1,12}$/)), { nil: undefined })
    ).map(([sign, whole, fraction, exponent]) =>
      `${sign}${whole}${fraction === undefined ? '' : `.${fraction}`}${exponent === undefined ? '' : exponent.join('')}`)
  },
  { weight: 1, arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true }).map((value) => JSON.stringify(value)) },
  {
    weight: 1,
    arbitrary: fc.constantFrom('1e999999999', '1e-999999999', '-1e400', '1.0000000000000000001', '9223372036854775807.0',
      '9223372036854775807.5', '92233720368547758070e-1', '92233720368547758080e-1', '0.5e1', '5e-1', '-9223372036854775808e0',
      '1e18', '1e19', '-1e19', '9.223372036854775807e18', '123456789012345678901234567890e-12', `1${'0'.repeat(1000)}`,
      `0.${'0'.repeat(1000)}1`, `1${'0'.repeat(1000)}e-1000`, '1e+0000000000000000000000018')
  }
)

/** JSON values of every shape, with odd keys (__proto__, constructor...) and odd strings. */
const hostileKey = fc.oneof(
  { weight: 3, arbitrary: oddText },
  {
    weight: 2,
    arbitrary: fc.constantFrom('id', 'name', 'tag', '__proto__', 'constructor', 'prototype', 'toString', 'valueOf',
      'hasOwnProperty', 'toJSON', 'then', 'ID', 'Name', 'tag ', '', 'value', 'isLosslessNumber')
  }
)
const hostileLeaf: fc.Arbitrary<Json> = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(2 ** 53, 2 ** 60, -(2 ** 63), 2 ** 63, 1e21, 5e-324, 0.1, 1.5),
  oddText
)
const { value: hostileValue } = fc.letrec<{ value: Json, array: Json[], object: Json }>((tie) => ({
  value: fc.oneof({ depthSize: 'small', withCrossShrink: true }, hostileLeaf, tie('array'), tie('object')),
  array: fc.array(tie('value'), { maxLength: 5 }),
  // fromEntries makes "__proto__" an own key, as JSON.parse does.
  object: fc.array(fc.tuple(hostileKey, tie('value')), { maxLength: 6 }).map((entries) => Object.fromEntries(entries))
}))

/** Objects shaped like a NewPlant whose fields are anything at all. */
const plantShaped: fc.Arbitrary<Json> = fc.record({
  id: fc.oneof(
    { weight: 3, arbitrary: fc.integer() },
    { weight: 2, arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true }) },
    { weight: 1, arbitrary: fc.constantFrom(...[...SEED_IDS].map(Number), 2 ** 63, -(2 ** 63), 2 ** 53 + 2) },
    { weight: 2, arbitrary: hostileValue }
  ),
  name: fc.oneof({ weight: 4, arbitrary: oddText }, { weight: 1, arbitrary: hostileValue }),
  tag: fc.oneof({ weight: 4, arbitrary: oddText }, { weight: 1, arbitrary: hostileValue }),
  extra: hostileValue
}, { requiredKeys: [] })

// ---------------------------------------------------------------------------------------------
// Generators: requests

const JSON_HEADERS = { ...AUTH, 'content-type': 'application/json' }
const post = (label: string, payload: string | Buffer, extra: Partial<Case> = {}): Case =>
  ({ label, method: 'POST', url: '/plants', headers: JSON_HEADERS, payload, ...extra })

/** A valid NewPlant, written as raw JSON with its fields in any order, odd spellings and extra fields. */
interface Written { text: string, plant: Plant, fields: Array<[string, string]>, whitespace: string }

const extraField = fc.tuple(
  fc.tuple(hostileKey, stringStyle).filter(([key]) => !['id', 'name', 'tag', '__proto__'].includes(key)),
  hostileValue
).filter(([[key], value]) => !isPoisoned({ [key]: value }))
  .map(([[key, style], value]): [string, string] => [jsonString(key, style), JSON.stringify(value)])

const WHITESPACE = ['', ' ', '\n', '\t', '\r\n', '  \t']

const writtenPlant: fc.Arbitrary<Written> = fc.record({
  plant: fc.record({ id: int64, name: storableText, tag: fc.option(storableText, { nil: undefined }) }),
  idSpelling: fc.oneof(fc.constant(undefined), spelling),
  styles: fc.tuple(stringStyle, stringStyle, stringStyle, stringStyle, stringStyle),
  // Distinct keys: a repeated key is refused (test/plugin/json-body.test.ts).
  extras: fc.uniqueArray(extraField, { maxLength: 3, selector: ([key]) => JSON.parse(key) as string }),
  order: fc.array(fc.nat(), { minLength: 6, maxLength: 6 }),
  whitespace: fc.constantFrom(...WHITESPACE)
}).map(({ plant, idSpelling, styles: [idKey, nameKey, tagKey, nameStyle, tagStyle], extras, order, whitespace }) => {
  const fields: Array<[string, string]> = [
    [jsonString('id', idKey), idSpelling === undefined ? plant.id.toString() : spell(plant.id, idSpelling)],
    [jsonString('name', nameKey), jsonString(plant.name, nameStyle)],
    ...(plant.tag === undefined ? [] : [[jsonString('tag', tagKey), jsonString(plant.tag, tagStyle)] as [string, string]]),
    ...extras
  ]
  const ordered = fields.map((field, index) => ({ field, rank: order[index] ?? index }))
    .sort((a, b) => a.rank - b.rank).map(({ field }) => field)
  const clean: Plant = plant.tag === undefined ? { id: plant.id, name: plant.name } : plant
  return { text: writeObject(ordered, whitespace), plant: clean, fields: ordered, whitespace }
})

function writeObject (fields: Array<[string, string]>, whitespace: string): string {
  const w = whitespace
  return `${w}{${w}${fields.map(([key, value]) => `${key}${w}:${w}${value}`).join(`${w},${w}`)}${w}}${w}`
}

/** Byte sequences that are not UTF-8: bad lead bytes, overlongs, encoded surrogates, past U+10FFFF, truncated. */
const INVALID_UTF8 = [
  [0xff], [0xfe], [0x80], [0xbf], [0xc0, 0x80], [0xc1, 0xbf], [0xe0, 0x80, 0x80], [0xed, 0xa0, 0x80],
  [0xed, 0xbf, 0xbf], [0xf4, 0x90, 0x80, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80], [0xe2, 0x82], [0xf0, 0x9f, 0x98], [0xc3]
]

/** A JSON value text that is never a valid id (not a number). */
const notANumber = fc.oneof(
  fc.constantFrom('true', 'false', 'null', '{}', '{"value":1}', '[1]', '[]', '""', '"5"', '"-0"', '"9223372036854775807"', '"1e3"'),
  fc.tuple(int64, stringStyle).map(([id, style]) => jsonString(id.toString(), style)),
  hostileValue.filter((value) => typeof value !== 'number').map((value) => JSON.stringify(value))
)
/** A JSON value text that is never a string. */
const notAString = fc.oneof(
  fc.constantFrom('true', 'false', 'null', '{}', '[]', '["a"]', '{"name":"a"}', '0', '-0', '1e999'),
  numberLiteral,
  hostileValue.filter((value) => typeof value !== 'string').map((value) => JSON.stringify(value))
)

type Mutation =
  | { kind: 'none' }
  | { kind: 'id', literal: string }
  | { kind: 'id-not-a-number', text: string }
  | { kind: 'drop', field: 'id' | 'name' | 'tag' }
  | { kind: 'text', field: 'name' | 'tag', text: string, style: StringStyle }
  | { kind: 'not-a-string', field: 'name' | 'tag', text: string }
  | { kind: 'invalid-utf8', field: 'name' | 'tag', bytes: number[], at: number }
  | { kind: 'poison', key: string, value: string }
  | { kind: 'raw-control', field: 'name' | 'tag', code: number }
  | { kind: 'wrap', around: 'array' | 'string' | 'null' }

const textField = fc.constantFrom<'name' | 'tag'>('name', 'tag')
const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  { weight: 2, arbitrary: fc.constant({ kind: 'none' as const }) },
  { weight: 6, arbitrary: numberLiteral.map((literal) => ({ kind: 'id' as const, literal })) },
  { weight: 2, arbitrary: notANumber.map((text) => ({ kind: 'id-not-a-number' as const, text })) },
  { weight: 1, arbitrary: fc.constantFrom('id', 'name', 'tag').map((field) => ({ kind: 'drop' as const, field: field as 'id' | 'name' | 'tag' })) },
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('text' as const), field: textField, text: oddText, style: stringStyle }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('not-a-string' as const), field: textField, text: notAString }) },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('invalid-utf8' as const), field: textField, bytes: fc.constantFrom(...INVALID_UTF8), at: fc.nat({ max: 40 }) })
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('poison' as const),
      key: fc.constantFrom('"__proto__"', '"\\u005f_proto__"', '"__\\u0070roto__"', '"constructor"'),
      value: fc.constantFrom('{}', '{"admin":true}', '{"prototype":{}}', '{"prototype":{"admin":true}}', '[]', 'null', '1')
    })
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('raw-control' as const), field: textField, code: fc.integer({ min: 0, max: 0x1f }) }) },
  { weight: 1, arbitrary: fc.constantFrom('array', 'string', 'null').map((around) => ({ kind: 'wrap' as const, around: around as 'array' | 'string' | 'null' })) }
)

const keyIs = (name: string) => ([key]: [string, string]) => JSON.parse(key) === name

/** Applies one mutation to a valid written plant: the body sent, and the plant it stands for, if any. */
function mutate (base: Written, change: Mutation): { payload: string | Buffer, plant?: Plant } {
  const { plant, whitespace } = base
  const fields = base.fields.map(([key, value]): [string, string] => [key, value])
  const replace = (name: string, value: string) => {
    const index = fields.findIndex(keyIs(name))
    if (index === -1) fields.push([JSON.stringify(name), value])
    else fields[index] = [fields[index][0], value]
  }
  const withField = (name: 'name' | 'tag', text: string): Plant => ({ ...plant, [name]: text })
  switch (change.kind) {
    case 'none':
      return { payload: base.text, plant }
    case 'id': {
      replace('id', change.literal)
      const id = exactInt64(change.literal)
      return { payload: writeObject(fields, whitespace), plant: id === undefined ? undefined : { ...plant, id } }
    }
    case 'id-not-a-number':
      replace('id', change.text)
      return { payload: writeObject(fields, whitespace) }
    case 'drop': {
      const rest = fields.filter((field) => !keyIs(change.field)(field))
      if (change.field !== 'tag') return { payload: writeObject(rest, whitespace) }
      return { payload: writeObject(rest, whitespace), plant: { id: plant.id, name: plant.name } }
    }
    case 'text':
      replace(change.field, jsonString(change.text, change.style))
      return { payload: writeObject(fields, whitespace), plant: isStorable(change.text) ? withField(change.field, change.text) : undefined }
    case 'not-a-string':
      replace(change.field, change.text)
      return { payload: writeObject(fields, whitespace) }
    case 'invalid-utf8': {
      const marker = '\u0001INVALID-UTF8\u0001'
      const current = fields.find(keyIs(change.field))?.[1] ?? '""'
      const inside = JSON.parse(current) as string
      const at = Math.min(change.at, inside.length)
      replace(change.field, `${JSON.stringify(inside.slice(0, at)).slice(0, -1)}${marker}${JSON.stringify(inside.slice(at)).slice(1)}`)
      const [head, tail] = writeObject(fields, whitespace).split(marker)
      return { payload: Buffer.concat([Buffer.from(head), Buffer.from(change.bytes), Buffer.from(tail)]) }
    }
    case 'poison': {
      const existing = fields.findIndex(keyIs(JSON.parse(change.key) as string))
      if (existing !== -1) fields.splice(existing, 1)
      fields.splice(fields.length >> 1, 0, [change.key, change.value])
      const poisoned = change.key !== '"constructor"' || change.value.startsWith('{"prototype"')
      return { payload: writeObject(fields, whitespace), plant: poisoned ? undefined : plant }
    }
    case 'raw-control': {
      // A control character written raw inside a JSON string: not JSON.
      replace(change.field, `"a${String.fromCharCode(change.code)}b"`)
      return { payload: writeObject(fields, whitespace) }
    }
    case 'wrap':
      return { payload: change.around === 'array' ? `[${base.text}]` : change.around === 'string' ? JSON.stringify(base.text) : 'null' }
  }
}

// Ways to break JSON text that is an object; each leaves text that no JSON parser may accept.
type Break =
  | { kind: 'truncate', at: number }
  | { kind: 'truncate-bytes', at: number }
  | { kind: 'trailing', garbage: string }
  | { kind: 'single-quotes' }
  | { kind: 'bad-number', literal: string }
  | { kind: 'comment', comment: string }
  | { kind: 'trailing-comma' }
  | { kind: 'unquoted-key' }
  | { kind: 'control-character', code: number }
  | { kind: 'utf16' }
  | { kind: 'bom' }

const brokenJson: fc.Arbitrary<Break> = fc.oneof(
  fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('truncate-bytes' as const), at: fc.nat() }),
  fc.record({
    kind: fc.constant('trailing' as const),
    garbage: fc.tuple(fc.constantFrom(...WHITESPACE), fc.constantFrom('x', '}', ']', ',', '{}', '0', 'null', '//', '/*', '"', '\u0000', '\u00e9', '\ufeff'), fc.string({ maxLength: 8 }))
      .map((parts) => parts.join(''))
  }),
  fc.constant({ kind: 'single-quotes' as const }),
  fc.record({
    kind: fc.constant('bad-number' as const),
    literal: fc.constantFrom('NaN', '-NaN', 'Infinity', '-Infinity', 'undefined', '+1', '.5', '01', '-01', '0x10', '1.', '-', '1e', '1e+', '--1', '1_000', '0b1', '1n', '١')
  }),
  fc.record({ kind: fc.constant('comment' as const), comment: fc.constantFrom('/* c */', '// c\n', '#c\n', '<!-- c -->') }),
  fc.constant({ kind: 'trailing-comma' as const }),
  fc.constant({ kind: 'unquoted-key' as const }),
  fc.record({ kind: fc.constant('control-character' as const), code: fc.integer({ min: 0, max: 0x1f }) }),
  fc.constant({ kind: 'utf16' as const }),
  fc.constant({ kind: 'bom' as const })
)

function breakJson (base: Written, change: Break): Case {
  const { text, fields, whitespace } = base
  const label = `broken JSON: ${change.kind}`
  switch (change.kind) {
    case 'truncate': // before the closing brace: never JSON
      return post(label, text.slice(0, change.at % (text.lastIndexOf('}') + 1)), { expect: [400] })
    case 'truncate-bytes': {
      const bytes = Buffer.from(text)
      return post(label, bytes.subarray(0, change.at % (bytes.lastIndexOf('}') + 1)), { expect: [400] })
    }
    case 'trailing':
      return post(label, `${text}${change.garbage}`, { expect: [400] })
    case 'single-quotes':
      return post(label, text.replaceAll('"', "'"), { expect: [400] })
    case 'bad-number':
      return post(label, writeObject(fields.map(([key, value]) => [key, keyIs('id')([key, value]) ? change.literal : value]), whitespace), { expect: [400] })
    case 'comment':
      return post(label, text.replace('{', `{${change.comment}`), { expect: [400] })
    case 'trailing-comma':
      return post(label, `${text.slice(0, text.lastIndexOf('}'))},}`, { expect: [400] })
    case 'unquoted-key':
      return post(label, writeObject(fields.map(([key, value]) => [JSON.parse(key) === 'id' ? 'id' : key, value]), whitespace), { expect: [400] })
    case 'control-character':
      return post(label, writeObject(fields.map(([key, value]) =>
        [key, keyIs('name')([key, value]) ? `"x${String.fromCharCode(change.code)}y"` : value]), whitespace), { expect: [400] })
    case 'utf16':
      return post(label, Buffer.from(text, 'utf16le'), { expect: [400] })
    case 'bom': // RFC 8259 lets a parser ignore a BOM or refuse it: either way, never a half-read plant.
      return post(label, `\ufeff${text}`, { expect: [createdStatus(base.plant), 400], plant: base.plant })
  }
}

// Content types that are JSON: any case, any parameters.
const jsonContentType = fc.tuple(
  fc.mixedCase(fc.constant('application/json')),
  fc.constantFrom('', ';', '; charset=utf-8', ';charset=UTF-8', '; charset="utf-8"', ' ; charset=utf-8', '; foo=bar', '; charset=utf-8; q=1')
).map(([type, parameters]) => type + parameters)
const NOT_JSON_TYPES = [
  'text/plain', 'text/json', 'text/html', 'application/jsonx', 'application/json-patch+json', 'application/vnd.api+json',
  'application/problem+json', 'application/merge-patch+json', 'application/x-www-form-urlencoded', 'application/octet-stream',
  'application/xml', '*/*', 'application/*', 'application', 'json', 'multipart/form-data; boundary=----x',
  'multipart/mixed; boundary=b', 'image/png', 'application/x-json', 'application/json5', 'application/jsonl',
  'application/ld+json', 'application/javascript'
]

type ContentTypeCase =
  | { kind: 'json', type: string }
  | { kind: 'not-json', type: string }
  | { kind: 'missing' }
  | { kind: 'multipart' }
  | { kind: 'random', type: string }

const contentTypeCase: fc.Arbitrary<ContentTypeCase> = fc.oneof(
  { weight: 3, arbitrary: jsonContentType.map((type) => ({ kind: 'json' as const, type })) },
  { weight: 3, arbitrary: fc.constantFrom(...NOT_JSON_TYPES).map((type) => ({ kind: 'not-json' as const, type })) },
  { weight: 1, arbitrary: fc.constant({ kind: 'missing' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'multipart' as const }) },
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme-ascii', maxLength: 30 }).filter((type) => !/json/i.test(type)).map((type) => ({ kind: 'random' as const, type })) }
)

function contentTypeRequest (base: Written, change: ContentTypeCase): Case {
  const label = `content type ${change.kind}: ${JSON.stringify('type' in change ? change.type : '')}`
  const success = createdStatus(base.plant)
  // A Buffer, so that inject adds no content type of its own.
  const payload = Buffer.from(base.text)
  switch (change.kind) {
    case 'json':
      return post(label, payload, { headers: { ...AUTH, 'content-type': change.type }, expect: [success], plant: base.plant })
    case 'not-json':
      return post(label, payload, { headers: { ...AUTH, 'content-type': change.type }, expect: [415] })
    case 'missing':
      return post(label, payload, { headers: { ...AUTH }, expect: [415] })
    case 'multipart': {
      const body = `--b\r\nContent-Disposition: form-data; name="plant"\r\nContent-Type: application/json\r\n\r\n${base.text}\r\n--b--\r\n`
      return post(label, body, { headers: { ...AUTH, 'content-type': 'multipart/form-data; boundary=b' }, expect: [415] })
    }
    case 'random':
      return post(label, payload, { headers: { ...AUTH, 'content-type': change.type }, expect: [400, 415] })
  }
}

// Authorization headers: valid ones, ones HTTP may read either way, and wrong ones of every kind.
interface AuthCase { label: string, header?: string | string[], accepted: boolean | 'either', invalidToken?: boolean }

const tokens = fc.constantFrom(TOKEN, OTHER_TOKEN)
const bearerScheme = fc.mixedCase(fc.constant('bearer'))
const wrongToken = fc.oneof(
  fc.tuple(tokens, fc.nat(), fc.constantFrom('x', 'X', '0', '-', '\u00e9', '\u0430', '\u{1f600}')).map(([token, at, character]) => {
    const index = at % token.length
    return token.slice(0, index) + character + token.slice(index + 1)
  }),
  fc.tuple(tokens, fc.nat()).map(([token, at]) => token.slice(0, at % token.length)).filter((token) => token !== ''),
  tokens.map((token) => `${token}x`),
  tokens.map((token) => token.toUpperCase()),
  fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 40 }).filter((token) => !/\s/.test(token)),
  fc.tuple(fc.integer({ min: 1000, max: 100_000 }), fc.constantFrom('x', 'A', '\u00e9', TOKEN)).map(([length, unit]) => unit.repeat(Math.ceil(length / unit.length)))
).filter((token) => token !== TOKEN && token !== OTHER_TOKEN)

const authCase: fc.Arbitrary<AuthCase> = fc.oneof(
  { weight: 3, arbitrary: fc.tuple(bearerScheme, tokens).map(([scheme, token]) => ({ label: 'valid', header: `${scheme} ${token}`, accepted: true })) },
  {
    weight: 2,
    arbitrary: fc.tuple(bearerScheme, fc.integer({ min: 1, max: 4 }), tokens, fc.constantFrom('', ' ', '  '), fc.constantFrom('', ' '))
      .map(([scheme, spaces, token, after, before]) => ({
        label: 'extra spaces', header: `${before}${scheme}${' '.repeat(spaces)}${token}${after}`, accepted: 'either' as const
      }))
  },
  { weight: 1, arbitrary: fc.constant({ label: 'missing', accepted: false, invalidToken: false }) },
  { weight: 1, arbitrary: fc.constantFrom('', ' ', 'Bearer', 'Bearer ', 'bearer   ').map((header) => ({ label: 'empty', header, accepted: false, invalidToken: false })) },
  {
    weight: 3,
    arbitrary: fc.tuple(bearerScheme, wrongToken).map(([scheme, token]) => ({ label: 'wrong token', header: `${scheme} ${token}`, accepted: false, invalidToken: true }))
  },
  {
    weight: 2,
    arbitrary: fc.tuple(
      fc.oneof(
        fc.constantFrom('Basic', 'Token', 'Digest', 'Bearer:', 'Bearerx', 'Bear', 'MAC', 'B\u00e9arer', 'B\u0435arer', 'Negotiate', 'OAuth'),
        fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 12 }).filter((scheme) => !/\s/.test(scheme) && !/^bearer$/i.test(scheme))
      ),
      tokens
    ).map(([scheme, token]) => ({ label: 'wrong scheme', header: `${scheme} ${token}`, accepted: false, invalidToken: false }))
  },
  {
    weight: 1,
    arbitrary: fc.tuple(tokens, fc.constantFrom('\t', ':', '=', '')).map(([token, separator]) =>
      ({ label: 'odd separator', header: `Bearer${separator}${token}`, accepted: false }))
  },
  {
    weight: 2,
    arbitrary: fc.tuple(tokens, fc.oneof(tokens.map((token) => `Bearer ${token}`), wrongToken.map((token) => `Bearer ${token}`)), fc.boolean())
      .map(([token, other, first]) => ({
        label: 'two headers',
        header: first ? [`Bearer ${token}`, other] : [other, `Bearer ${token}`],
        accepted: false,
        invalidToken: false
      }))
  },
  {
    weight: 1,
    arbitrary: fc.tuple(tokens, fc.constantFrom(', Bearer x', ',Bearer x', ', ', '\u0000', ' x', '\u200b', '\u0085', '=', ' =')).map(([token, suffix]) =>
      ({ label: 'token with a suffix', header: `Bearer ${token}${suffix}`, accepted: false }))
  },
  {
    // Unicode spaces that are not HTTP whitespace (NBSP is byte 0xA0 on the wire): @fastify/bearer-auth
    // trims them with String.prototype.trim and accepts the token (see the report); either answer is taken here.
    weight: 1,
    arbitrary: fc.tuple(tokens, fc.constantFrom('\u00a0', '\u2028', '\ufeff', '\u3000', '\u000b'), fc.boolean()).map(([token, space, before]) =>
      ({ label: 'Unicode space around the token', header: before ? `Bearer ${space}${token}` : `Bearer ${token}${space}`, accepted: 'either' as const }))
  }
)

interface AuthRoute { label: string, method: InjectOptions['method'], url: string, success: number, withBody: boolean }
const authRoute = fc.constantFrom<AuthRoute>(
  { label: 'create', method: 'POST', url: '/plants', success: 200, withBody: true },
  { label: 'list', method: 'GET', url: '/plants', success: 200, withBody: false },
  { label: 'read', method: 'GET', url: '/plants/1', success: 200, withBody: false },
  { label: 'read missing', method: 'GET', url: '/plants/424242', success: 404, withBody: false },
  { label: 'delete missing', method: 'DELETE', url: '/plants/424242', success: 404, withBody: false }
)

function authRequest (route: AuthRoute, auth: AuthCase, base: Written): Case {
  const headers: Record<string, string | string[]> = route.withBody ? { 'content-type': 'application/json' } : {}
  if (auth.header !== undefined) headers.authorization = auth.header
  const success = route.withBody ? createdStatus(base.plant) : route.success
  const expect = auth.accepted === true ? [success] : auth.accepted === false ? [401] : [success, 401]
  return {
    label: `${route.label}, authorization ${auth.label}`,
    method: route.method,
    url: route.url,
    headers,
    payload: route.withBody ? base.text : undefined,
    expect,
    plant: route.withBody ? base.plant : undefined,
    invalidToken: auth.invalidToken
  }
}

// Paths, methods and query strings.
const percentEncode = (text: string) =>
  [...Buffer.from(text)].map((byte) => /[A-Za-z0-9\-._~]/.test(String.fromCharCode(byte)) ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`).join('')

const segment = fc.oneof(
  { weight: 3, arbitrary: int64.map(String) },
  { weight: 1, arbitrary: outOfRange.map(String) },
  {
    weight: 2,
    arbitrary: fc.constantFrom('-0', '+1', '01', '00', '1e3', '1.0', ' 1', '0x10', '1_000', '\u0661\u0662', '9223372036854775807',
      '9223372036854775808', '-9223372036854775809', '', '.', '..', '%20', '%2B1', '%2D1', '%31', '1%00', 'plants', 'null')
  },
  { weight: 1, arbitrary: fc.integer({ min: 19, max: 1100 }).map((length) => '1'.repeat(length)) },
  { weight: 2, arbitrary: fc.webSegment() },
  { weight: 2, arbitrary: oddText.map(percentEncode) },
  {
    weight: 1,
    arbitrary: fc.constantFrom('%', '%Z', '%ZZ', '%0', '%00', '%FF', '%C0%80', '%ED%A0%80', '%E2%82', '%2F', '%5C', '%2e%2e', '%u0041', '%%', '%25')
  },
  { weight: 1, arbitrary: fc.constantFrom('\u00e9', '\u{1f600}', ' ', '"', '<', '\\', '|', '^', '`', '{', '}', ';', '@', ':', '*') }
)
const OTHER_PATHS = [
  '/', '/healthz', '/readyz', '/metrics', '/documentation', '/documentation/json', '/documentation/yaml', '/PLANTS', '//plants',
  '/plants/../plants', '/%70lants', '/plants%2F1', '/plants;1', '/plants/1;x', '/./plants', '/plants/.', '/healthz/x', '/Plants/1',
  '/plants//1', '/plants/1/', '/plants/1/x', '/plants%00', '/plants.json', '/plants?'
]
const queryPart = fc.oneof(
  fc.constantFrom('limit', 'after', 'limit[]', 'after[0]', 'LIMIT', 'x', '', '__proto__', 'constructor[prototype]', '%6Cimit', 'limit%00'),
  fc.webSegment()
)
const queryValue = fc.oneof(
  fc.constantFrom('', '0', '1', '100', '1000', '1001', '-1', '1e2', '1.5', 'abc', ' 1', '%ZZ', '%00', '%20', 'true', 'null', '[]', '9223372036854775807', '9223372036854775808', '-9223372036854775808'),
  int64.map(String),
  oddText.map(percentEncode)
)
const query = fc.array(fc.tuple(queryPart, fc.option(queryValue, { nil: undefined })), { maxLength: 4 })
  .map((pairs) => pairs.map(([key, value]) => value === undefined ? key : `${key}=${value}`).join('&'))

const methodArbitrary = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('GET', 'HEAD', 'POST', 'DELETE', 'PUT', 'PATCH', 'OPTIONS') },
  { weight: 1, arbitrary: fc.constantFrom(...METHODS) }
) as fc.Arbitrary<InjectOptions['method']>

const pathCase = fc.record({
  method: methodArbitrary,
  path: fc.oneof(
    { weight: 4, arbitrary: fc.tuple(fc.array(segment, { minLength: 1, maxLength: 3 }), fc.boolean()).map(([segments, slash]) => `/plants/${segments.join('/')}${slash ? '/' : ''}`) },
    { weight: 1, arbitrary: fc.constant('/plants') },
    { weight: 1, arbitrary: fc.constantFrom(...OTHER_PATHS) }
  ),
  query: fc.option(query, { nil: undefined }),
  fragment: fc.option(fc.constantFrom('#', '#x', '#%ZZ'), { nil: undefined }),
  auth: fc.oneof({ weight: 4, arbitrary: fc.constant('valid') }, { weight: 1, arbitrary: fc.constantFrom('none', 'wrong') }),
  body: fc.option(writtenPlant, { nil: undefined })
})

// ---------------------------------------------------------------------------------------------
// Sizes: recipes rather than bodies, so that a failure report stays short

type SizeRecipe =
  | { kind: 'long-name', bytes: number, fill: string }
  | { kind: 'around-the-limit', delta: number, fill: string }
  | { kind: 'huge-array', count: number, item: string }
  | { kind: 'deep', depth: number, open: string, close: string, lossless: boolean }
  | { kind: 'many-keys', count: number }
  | { kind: 'long-number', digits: number }

const sizeRecipe: fc.Arbitrary<SizeRecipe> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('long-name' as const),
      bytes: fc.oneof(fc.integer({ min: 0, max: 5000 }), fc.integer({ min: 5000, max: 2_500_000 })),
      fill: storableText.filter((text) => text !== '')
    })
  },
  {
    weight: 3,
    arbitrary: fc.record({ kind: fc.constant('around-the-limit' as const), delta: fc.integer({ min: -8, max: 8 }), fill: fc.constantFrom('x', '\u00e9', '\u{1f600}', '\\u0041') })
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('huge-array' as const),
      count: fc.oneof(fc.integer({ min: 0, max: 1000 }), fc.integer({ min: 1000, max: 600_000 })),
      item: fc.constantFrom('0', 'null', '1.5', '"x"', '{}', '[]', '12345678901234567', 'true', '{"id":1,"name":"n"}')
    })
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('deep' as const),
      depth: fc.oneof(fc.integer({ min: 1, max: 1000 }), fc.integer({ min: 1000, max: 300_000 })),
      open: fc.constantFrom('[', '{"a":', '[{"b":'),
      close: fc.constant(''),
      lossless: fc.boolean()
    }).map((recipe) => ({ ...recipe, close: recipe.open === '[' ? ']' : recipe.open === '{"a":' ? '}' : '}]' }))
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('many-keys' as const), count: fc.integer({ min: 0, max: 60_000 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('long-number' as const), digits: fc.integer({ min: 1, max: 1_100_000 }) }) }
)

function sizeRequest (recipe: SizeRecipe, plant: Plant): Case {
  const head = (id: string) => `{"id":${id},"name":${JSON.stringify(plant.name)}`
  const label = `size: ${recipe.kind}`
  const decide = (payload: string, stored: Plant, alsoAllowed: number[] = []): Case => {
    if (Buffer.byteLength(payload) > BODY_LIMIT) return post(label, payload, { expect: [413] })
    if (!isStorable(stored.name)) return post(label, payload, { expect: [400] })
    return post(label, payload, { expect: [createdStatus(stored), ...alsoAllowed], plant: stored })
  }
  switch (recipe.kind) {
    case 'long-name': {
      const name = recipe.fill.repeat(Math.ceil(recipe.bytes / Buffer.byteLength(recipe.fill)))
      return decide(`{"id":${plant.id},"name":${JSON.stringify(name)}}`, { id: plant.id, name })
    }
    case 'around-the-limit': {
      // A body of exactly BODY_LIMIT + delta bytes: the limit is inclusive.
      const frame = `{"id":${plant.id},"name":""}`
      const unit = Buffer.byteLength(recipe.fill)
      const room = BODY_LIMIT + recipe.delta - Buffer.byteLength(frame)
      const fill = recipe.fill.repeat(Math.floor(room / unit)) + 'x'.repeat(room % unit)
      const name = recipe.fill === '\\u0041' ? fill.replaceAll('\\u0041', 'A') : fill
      const payload = `{"id":${plant.id},"name":"${fill}"}`
      return decide(payload, { id: plant.id, name })
    }
    case 'huge-array':
      return decide(`${head(String(plant.id))},"extra":[${Array(recipe.count).fill(recipe.item).join(',')}]}`, { id: plant.id, name: plant.name })
    case 'deep': {
      // The id spelled "<id>.0" is read from its literal (json-body.ts's long numbers).
      const id = recipe.lossless ? `${plant.id}.0` : String(plant.id)
      const payload = `${head(id)},"extra":${recipe.open.repeat(recipe.depth)}${recipe.open === '[' ? '' : '0'}${recipe.close.repeat(recipe.depth)}}`
      // A parser may limit nesting ("not valid JSON"): a 400 is allowed, never a 5xx.
      return decide(payload, { id: plant.id, name: plant.name }, [400])
    }
    case 'many-keys': {
      const keys = Array.from({ length: recipe.count }, (_, index) => `"k${index}":${index}`).join(',')
      return decide(`${head(String(plant.id))}${recipe.count > 0 ? ',' : ''}${keys}}`, { id: plant.id, name: plant.name })
    }
    case 'long-number':
      return decide(`${head(String(plant.id))},"extra":${'9'.repeat(recipe.digits)}}`, { id: plant.id, name: plant.name })
  }
}

// ---------------------------------------------------------------------------------------------
// The properties

let generatedCases = 0
let executedCases = 0

async function property<T> (t: Test, name: PropertyName, arbitrary: fc.Arbitrary<T>, toCase: (value: T) => Case, examples: T[] = []) {
  const target = await Target.start(t)
  const numRuns = runsFor(name)
  const details = await fc.check(fc.asyncProperty(arbitrary, (value) => target.run(toCase(value))), {
    numRuns,
    // Cases once found by this fuzzer run first, every time.
    examples: examples.map((example): [T] => [example]),
    ...(SEED === undefined ? {} : { seed: SEED })
  })
  generatedCases += details.numRuns
  executedCases += target.cases
  t.comment(`${name}: ${details.numRuns} of ${numRuns} cases, ${target.cases} requests sent (seed ${details.seed})`)
  if (details.failed) {
    const error = details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance)
    const report = `${fc.defaultReportMessage(details) ?? 'no report'}\nGot error: ${error}`
    t.comment(report)
    t.fail(`${name}: a generated request broke a property (seed ${details.seed}, path ${details.counterexamplePath})`, {
      diagnostic: true,
      report
    })
  } else {
    t.pass(`${name}: every one of ${details.numRuns} generated requests holds`)
  }
}

t.comment(`FUZZ_RUNS=${TOTAL_RUNS}${SEED === undefined ? '' : `, FUZZ_SEED=${SEED}`}`)

await t.test('hostile JSON bodies', async (t) => {
  const body = fc.oneof(
    { weight: 3, arbitrary: plantShaped.map((value) => ({ text: JSON.stringify(value), value })) },
    { weight: 2, arbitrary: hostileValue.map((value) => ({ text: JSON.stringify(value), value })) },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 4, stringUnit: oddCharacter }).map((value) => ({ text: JSON.stringify(value), value: value as unknown })) },
    { weight: 1, arbitrary: fc.json({ maxDepth: 4 }).map((text) => ({ text, value: JSON.parse(text) as unknown })) }
  )
  await property(t, 'hostile JSON bodies', body, ({ text, value }) => {
    const plant = plantOf(value)
    return post('a JSON value', text, { expect: outcome(plant), plant })
  })
})

await t.test('near-valid plants with one field mutated', async (t) => {
  await property(t, 'near-valid plants with one field mutated', fc.tuple(writtenPlant, mutation), ([base, change]) => {
    if (exactInt64(base.fields.find(keyIs('id'))![1]) !== base.plant.id) throw new Error('generator bug: id spelling')
    const { payload, plant } = mutate(base, change)
    return post(`mutation ${change.kind}`, payload, { expect: outcome(plant), plant })
  })
})

await t.test('broken JSON', async (t) => {
  await property(t, 'broken JSON', fc.tuple(writtenPlant, brokenJson), ([base, change]) => breakJson(base, change))
})

await t.test('sizes and nesting', async (t) => {
  const plant = fc.record({ id: int64, name: storableText })
  await property(t, 'sizes and nesting', fc.tuple(sizeRecipe, plant), ([recipe, sent]) => sizeRequest(recipe, sent))
})

await t.test('content types', async (t) => {
  await property(t, 'content types', fc.tuple(writtenPlant, contentTypeCase), ([base, change]) => contentTypeRequest(base, change))
})

await t.test('authorization', async (t) => {
  await property(t, 'authorization', fc.tuple(authRoute, authCase, writtenPlant), ([route, auth, base]) => authRequest(route, auth, base))
})

await t.test('paths, methods and query strings', async (t) => {
  await property(t, 'paths, methods and query strings', pathCase, ({ method, path, query, fragment, auth, body }) => {
    const headers: Record<string, string> = auth === 'valid' ? { ...AUTH } : auth === 'wrong' ? { authorization: 'Bearer nope' } : {}
    if (body !== undefined) headers['content-type'] = 'application/json'
    const url = `${path}${query === undefined ? '' : `?${query}`}${fragment ?? ''}`
    const c: Case = { label: `${method} ${auth}`, method, url, headers, payload: body?.text, plant: body?.plant }
    // A read of a seeded plant by its plain id must find it.
    const seed = SEEDS.find((plant) => path === `/plants/${plant.id}`)
    if (method === 'GET' && auth === 'valid' && seed !== undefined && query === undefined && body === undefined) c.expect = [200]
    return c
  }, [
    // An id longer than routerOptions.maxParamLength (1000): Fastify's 414, which CONTRACT.md does not document.
    { method: 'GET', path: `/plants/${'1'.repeat(1001)}`, query: undefined, fragment: undefined, auth: 'valid', body: undefined }
  ])
})

t.comment(`fuzz: ${generatedCases} generated cases over 7 properties, ${executedCases} requests sent (shrinking included)`)
