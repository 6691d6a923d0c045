// The typed client of plant-store. Its types come from the service's TypeBox schemas (type-only
// imports: nothing of TypeBox is loaded at run time); it needs nothing but a `fetch`.
import type { Static } from 'typebox'
import type { ErrorBody } from '../schemas/error.js'
import type { NewPlant, Plant, PlantListQuerySchema, PlantListSchema } from '../schemas/plant.js'
import { INT64_MAX, INT64_MIN, isAcceptableToken } from '../schemas/protocol.js'
import { realClock, type ClientClock, type InternalClientOptions } from './clock.js'
import { PlantNotFoundError, refusal, ResponseTimeoutError, UnexpectedResponseError, type Operation } from './errors.js'
import { etagOf, nextPageUrl, NOT_MODIFIED, withEtag } from './conditional.js'
import { parseExactJson, stringifyExactJson } from '../schemas/exact-json.js'
import { retryAfterDelay, retrySettings, sendWithRetries, type RetryOptions, type RetrySettings } from './retry.js'
import { followChanges, MAX_CHANGES_WAIT, type Change, type ChangesOptions, type ChangesPage } from './changes.js'

export {
  CursorGoneError, InvalidRequestError, PlantExistsError, PlantNotFoundError, PlantStoreError, PreconditionFailedError, RateLimitedError, ResponseTimeoutError,
  RouteNotFoundError, ServiceUnavailableError, UnauthorizedError, UnexpectedResponseError
} from './errors.js'
export { etagOf, NOT_MODIFIED }
export { parseExactJson, stringifyExactJson } from '../schemas/exact-json.js'
export type { RetryOptions } from './retry.js'
export type { Change, ChangesOptions, ChangeType } from './changes.js'
export type { ErrorBody, NewPlant, Plant }

/** A plant as GET /plants lists it: with its id. */
export type ListedPlant = Static<typeof PlantListSchema>[number]
/** A page of GET /plants: `limit` plants at most (1 to 1000, the service's default 100), after the id `after`. */
export type ListQuery = Partial<Static<typeof PlantListQuerySchema>>

export interface PlantStoreClientOptions {
  /**
   * Where the service answers, with the prefix it is mounted at if any: `http://127.0.0.1:3000`.
   * An http: or https: URL without a user name, password, query or fragment.
   */
  baseUrl: string | URL
  /** A bearer token the service accepts: visible ASCII (`!` to `~`), as the service requires. */
  token: string
  /** The fetch to send requests with (default: the global one), e.g. another runtime's or a test's. */
  fetch?: typeof fetch
  /** Retries of 429 and 503 answers and of network failures; `false` turns them off. */
  retry?: RetryOptions | false
  /**
   * The longest wait for one attempt's whole answer, headers and body, in ms (default 30000; 0:
   * none). An attempt past it fails like a network failure (retried); the call then rejects with a
   * ResponseTimeoutError.
   */
  timeout?: number
  /** The largest answer body read, in bytes (default 8 MiB; a list page is at most 1 MiB): larger is an UnexpectedResponseError. */
  maxResponseBytes?: number
}

export const DEFAULT_TIMEOUT = 30_000
export const DEFAULT_MAX_RESPONSE_BYTES = 8 * 1024 * 1024

/** A setting of at least `minimum` ms or bytes, its default when not given; a RangeError names it otherwise. */
function checkedAmount (name: string, value: number | undefined, fallback: number, minimum: number): number {
  if (value === undefined) return fallback
  if (!Number.isSafeInteger(value) || value < minimum) throw new RangeError(`${name} must be an integer of at least ${minimum}, not ${value}`)
  return value
}

/**
 * An id given from plain JavaScript as well as TypeScript: an int64 bigint, or a number that is
 * a safe integer (a larger one was rounded before it got here). A TypeError names anything else.
 */
function checkedId (id: unknown, name = 'id'): bigint {
  if (typeof id === 'number' && Number.isSafeInteger(id)) return BigInt(id)
  if (typeof id === 'bigint' && id >= INT64_MIN && id <= INT64_MAX) return id
  const shown = typeof id === 'string' ? `a string of ${id.length} characters` : typeof id === 'bigint' ? 'a bigint outside int64' : String(id)
  throw new TypeError(`${name} must be an int64 bigint or a safe integer number, not ${shown}`)
}

/** The path of one plant: the id checked, written in decimal digits, and encoded all the same. */
const plantPath = (id: unknown) => `/plants/${encodeURIComponent(String(checkedId(id)))}`

export interface CallOptions {
  /** Aborts the call, also while it waits to retry: it rejects with the signal's reason. */
  signal?: AbortSignal
}

/** A write only while the plant is at this ETag (etagOf a result): PreconditionFailedError (412) otherwise. */
export interface WriteOptions extends CallOptions { ifMatch?: string }

/** One attempt's answer, with its whole body, read within the attempt's time. */
interface Answer {
  response: Response
  /** The body as text ('' for a redirect, whose body is not read). */
  text: string
  /** A body past maxResponseBytes, read no further: final, not worth another attempt. */
  tooLarge?: UnexpectedResponseError
}

/** A request as sent, and its last answer. */
interface Call extends Answer {
  operation: Operation
  url: string
  /** An earlier attempt may have been carried out (see Sent). */
  uncertain: boolean
}

// 304 Not Modified is no redirect: the answer to a get with ifNoneMatch.
const isRedirect = (response: Response) => response.type === 'opaqueredirect' || (response.status >= 300 && response.status < 400 && response.status !== 304)

/** The base URL checked, without a trailing slash; a TypeError names what is wrong with it. */
function checkedBaseUrl (option: string | URL): string {
  let url: URL
  try {
    url = new URL(option)
  } catch {
    throw new TypeError('baseUrl must be an absolute http: or https: URL, such as http://127.0.0.1:3000')
  }
  // Checked first, so that no message below repeats a password. fetch refuses such a URL on every call.
  if (url.username !== '' || url.password !== '') {
    throw new TypeError('baseUrl must not hold a user name or password: the token is the credential (fetch refuses them)')
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new TypeError(`baseUrl must be an http: or https: URL, not ${JSON.stringify(String(option))}`)
  }
  // An empty query or fragment ("…/?") leaves no search or hash, but a "?" or "#" in the href all the same.
  if (/[?#]/.test(url.href)) {
    throw new TypeError('baseUrl must not have a query or a fragment: the client adds the path of each route to it')
  }
  return url.href.replace(/\/+$/, '')
}

const isPlant = (value: unknown): value is Plant =>
  typeof value === 'object' && value !== null &&
  typeof (value as Plant).name === 'string' && ['string', 'undefined'].includes(typeof (value as Plant).tag)

const isListedPlant = (value: unknown): value is ListedPlant =>
  isPlant(value) && typeof (value as ListedPlant).id === 'bigint'

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null

// A change: its cursor, and an event of a type with an exact id (the service checks the rest of it).
const isChange = (value: unknown): value is Change =>
  isObject(value) && typeof value.cursor === 'string' && isObject(value.event) && typeof value.event.type === 'string' && typeof value.event.id === 'bigint'

const isChangesPage = (value: unknown): value is ChangesPage =>
  isObject(value) && Array.isArray(value.changes) && value.changes.every(isChange) && typeof value.next === 'string'

/**
 * A client of the plant-store API. Ids are `bigint` both ways, exact over the whole int64 range.
 * Every refusal is thrown as a PlantStoreError (a subclass per status; a 404 that is not the
 * service's "no such plant" is a RouteNotFoundError) carrying the status and the Error body. 429 and 503 answers and network failures are retried (see RetryOptions); each
 * operation is safe to repeat, see `create` and `delete` for how they settle a repeated attempt.
 */
export class PlantStoreClient {
  readonly #baseUrl: string
  readonly #authorization: string
  readonly #fetch: typeof fetch
  readonly #retry: RetrySettings
  readonly #timeout: number
  readonly #maxResponseBytes: number
  readonly #clock: ClientClock

  constructor (options: PlantStoreClientOptions) {
    // Checked now, so that a mistake fails here rather than on every call (as a network failure, retried).
    this.#baseUrl = checkedBaseUrl(options.baseUrl)
    // The token is not repeated in the message: it is a secret.
    if (typeof options.token !== 'string' || !isAcceptableToken(options.token)) {
      throw new TypeError('token must be visible ASCII characters (! to ~), without spaces: the service accepts no other')
    }
    this.#authorization = `Bearer ${options.token}`
    this.#fetch = options.fetch ?? ((input, init) => fetch(input, init))
    this.#retry = retrySettings(options.retry)
    this.#timeout = checkedAmount('timeout', options.timeout, DEFAULT_TIMEOUT, 0)
    this.#maxResponseBytes = checkedAmount('maxResponseBytes', options.maxResponseBytes, DEFAULT_MAX_RESPONSE_BYTES, 1)
    this.#clock = (options as InternalClientOptions).clock ?? realClock
  }

  /**
   * Creates a plant: the stored Plant, without its id. PlantExistsError (409) when the id is
   * taken. When an earlier attempt may have been carried out (503, or no answer) and a retry meets
   * 409, the plant is read back: if it is the plant sent, that earlier attempt created it and
   * this resolves; otherwise the 409 is thrown.
   */
  async create (plant: NewPlant, { signal }: CallOptions = {}): Promise<Plant> {
    const sent = await this.#send('POST /plants', '/plants', signal, stringifyExactJson({ ...plant, id: checkedId(plant?.id, 'plant.id') }))
    if (sent.response.status === 409 && sent.uncertain) {
      const stored = await this.get(plant.id, { signal }).catch((error: unknown) => {
        if (error instanceof PlantNotFoundError) return undefined // deleted since: the 409 stands
        throw error
      })
      // Only name and tag are stored: the same values mean it is the plant sent.
      if (stored?.name === plant.name && stored.tag === plant.tag) return stored
    }
    return withEtag(await this.#read(sent, isPlant, 'a Plant'), sent.response)
  }

  /**
   * The plant with this id, without its id (its ETag: etagOf the result); PlantNotFoundError (404)
   * when there is none. With `ifNoneMatch` (an ETag the caller has), NOT_MODIFIED while it is current.
   */
  async get (id: bigint, options?: CallOptions): Promise<Plant>
  async get (id: bigint, options: CallOptions & { ifNoneMatch: string }): Promise<Plant | typeof NOT_MODIFIED>
  async get (id: bigint, { signal, ifNoneMatch }: CallOptions & { ifNoneMatch?: string } = {}): Promise<Plant | typeof NOT_MODIFIED> {
    const sent = await this.#send('GET /plants/{id}', plantPath(id), signal, undefined, ifNoneMatch === undefined ? {} : { 'if-none-match': ifNoneMatch })
    if (sent.response.status === 304) return NOT_MODIFIED
    return withEtag(await this.#read(sent, isPlant, 'a Plant'), sent.response)
  }

  /**
   * Replaces the name and tag of a stored plant (a tag left out is removed): the Plant as stored,
   * with its new ETag. PlantNotFoundError (404) when there is none: PUT never creates. With
   * `ifMatch`, PreconditionFailedError (412) when the plant is at another ETag; when an earlier
   * attempt may have been carried out and a retry meets that 412, the plant is read back: if it is
   * the plant sent, that attempt updated it and this resolves.
   */
  async update (id: bigint, plant: Plant, { signal, ifMatch }: WriteOptions = {}): Promise<Plant> {
    const body = stringifyExactJson(plant.tag === undefined ? { name: plant.name } : { name: plant.name, tag: plant.tag })
    const sent = await this.#send('PUT /plants/{id}', plantPath(id), signal, body, ifMatch === undefined ? {} : { 'if-match': ifMatch })
    if (sent.response.status === 412 && sent.uncertain) {
      const stored = await this.get(id, { signal })
      if (stored.name === plant.name && stored.tag === plant.tag) return stored
    }
    return withEtag(await this.#read(sent, isPlant, 'a Plant'), sent.response)
  }

  /** One page of plants in ascending id order (with `tag`, of that tag only); pass the last id of a page as `after` for the next. */
  async list (query: ListQuery & CallOptions = {}): Promise<ListedPlant[]> {
    return (await this.#page(query)).page
  }

  async #page ({ limit, after, tag, signal }: ListQuery & CallOptions, path?: string) {
    const query = new URLSearchParams()
    if (tag !== undefined) query.set('tag', tag)
    if (limit !== undefined) query.set('limit', String(limit))
    if (after !== undefined) query.set('after', String(checkedId(after, 'after')))
    const search = query.toString()
    const sent = await this.#send('GET /plants', path ?? (search === '' ? '/plants' : `/plants?${search}`), signal)
    const page = await this.#read(sent, (value): value is ListedPlant[] => Array.isArray(value) && value.every(isListedPlant), 'a list of plants')
    return { page, sent }
  }

  /**
   * The pages of a list (ListQuery: `tag`, `limit`, `after`), following each page's Link rel="next"
   * to the last, which has none. Only here is the Link read: `list` answers a page whatever it links to.
   */
  async * pages (query: ListQuery & CallOptions = {}): AsyncGenerator<ListedPlant[], void, undefined> {
    let next: string | undefined
    do {
      const { page, sent } = await this.#page(query, next)
      next = nextPageUrl(sent.response, sent.url, this.#baseUrl)
      yield page
    } while (next !== undefined)
  }

  /**
   * Every plant after `after` (default: all), in ascending id order, a page of `limit` at a time.
   * A page may end early (the service bounds pages in bytes too): only an empty page ends it.
   */
  async * listAll ({ limit, after, signal }: ListQuery & CallOptions = {}): AsyncGenerator<ListedPlant, void, undefined> {
    let cursor = after
    for (;;) {
      const page = await this.list({ limit, after: cursor, signal })
      if (page.length === 0) return
      const last = page[page.length - 1].id
      // A page that does not move the cursor on (a cache that ignores the query) would loop forever.
      if (cursor !== undefined && last <= cursor) {
        throw new UnexpectedResponseError(200, `GET /plants after ${cursor} listed ${last}: the cursor did not move on`)
      }
      yield * page
      cursor = last
    }
  }

  /**
   * The change feed (GET /plants/changes): every committed create, update and delete after `after`
   * (a change's `cursor`; `'now'`: from the head on; none: from the oldest change kept), once each,
   * in the feed's order, as an endless iteration of long-polls of `wait` seconds (with `wait: 0`, it
   * ends once caught up). A failure that may pass (no answer, 429, 5xx, once the call's retries are
   * spent) is waited out with the retries' backoff, and the feed asked again from the last cursor:
   * nothing is missed or repeated. A refusal (400, 401, 404, a 410 CursorGoneError: list again) is
   * thrown; `signal` ends it. Event ids are exact bigints.
   */
  changes (options: ChangesOptions = {}): AsyncGenerator<Change, void, undefined> {
    // An attempt's time covers the long-poll's wait too.
    const longer = (options.wait ?? MAX_CHANGES_WAIT) * 1000
    return followChanges(async (query, signal) => {
      const sent = await this.#send('GET /plants/changes', `/plants/changes?${query}`, signal, undefined, {}, longer)
      return this.#read(sent, isChangesPage, 'a page of changes')
    }, this.#clock, this.#retry, options)
  }

  /**
   * Deletes the plant with this id; PlantNotFoundError (404) when there is none. When an earlier
   * attempt may have been carried out (503, or no answer) and a retry meets that PlantNotFoundError,
   * that attempt deleted it, or someone else did: the plant is gone, as asked, and this resolves.
   */
  async delete (id: bigint, { signal, ifMatch }: WriteOptions = {}): Promise<void> {
    const sent = await this.#send('DELETE /plants/{id}', plantPath(id), signal, undefined, ifMatch === undefined ? {} : { 'if-match': ifMatch })
    try {
      await this.#read(sent, (value): value is void => value === undefined, 'no body')
    } catch (error) {
      if (!(error instanceof PlantNotFoundError && sent.uncertain)) throw error
    }
  }

  async #send (operation: Operation, path: string, signal?: AbortSignal, body?: string, conditions: Record<string, string> = {}, longer = 0): Promise<Call> {
    const headers: Record<string, string> = { authorization: this.#authorization, accept: 'application/json', ...conditions }
    if (body !== undefined) headers['content-type'] = 'application/json'
    const method = operation.split(' ')[0]
    const url = this.#baseUrl + path
    // An attempt is the request and its whole answer: a body that stalls or is cut short is no
    // answer, retried as a network failure is (a create's lost 200 is settled by its read-back).
    const attempt = async (): Promise<Answer> => {
      const deadline = this.#timeout === 0 ? undefined : this.#deadline(this.#timeout + longer)
      const signals = [signal, deadline?.signal].filter((each) => each !== undefined)
      // Never followed: a redirect could answer with a plant it never created, or send the body elsewhere.
      const init: RequestInit = { method, headers, body, redirect: 'manual', signal: signals.length > 1 ? AbortSignal.any(signals) : signals[0] }
      try {
        const response = await this.#fetch(url, init)
        const answer = { response, ...await this.#body(response, operation) }
        deadline?.cancel()
        return answer
      } catch (error) {
        deadline?.cancel()
        // An abort of `signal` is the caller's own: sendWithRetries rejects with its reason instead.
        throw deadline?.signal.aborted === true ? this.#timedOut(operation) : error
      }
    }
    const { answer, uncertain } = await sendWithRetries(attempt, this.#retry, this.#clock, signal)
    const { response } = answer
    if (isRedirect(response)) {
      const location = response.headers.get('location')
      throw new UnexpectedResponseError(response.status, `The answer to ${operation} is a redirect (${response.status}` +
        `${location === null ? '' : ` to ${location}`}), which the client does not follow: check baseUrl`)
    }
    return { ...answer, uncertain, operation, url }
  }

  /** A signal that aborts once the attempt's time is up, as AbortSignal.timeout does, on the client's clock. */
  #deadline (ms: number) {
    const controller = new AbortController()
    const cancel = this.#clock.schedule(() => controller.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')), ms)
    return { signal: controller.signal, cancel }
  }

  #timedOut (operation: Operation): ResponseTimeoutError {
    return new ResponseTimeoutError(`No complete answer to ${operation} within ${this.#timeout} ms (the client's timeout)`)
  }

  /** The answer's body as text, at most maxResponseBytes of it; a redirect's is not read. */
  async #body (response: Response, operation: Operation): Promise<Omit<Answer, 'response'>> {
    const tooLarge = () => ({
      text: '',
      tooLarge: new UnexpectedResponseError(response.status,
        `The answer to ${operation} is larger than ${this.#maxResponseBytes} bytes (the client's maxResponseBytes)`)
    })
    if (isRedirect(response) || Number(response.headers.get('content-length') ?? 0) > this.#maxResponseBytes) {
      await response.body?.cancel()
      return isRedirect(response) ? { text: '' } : tooLarge()
    }
    if (response.body === null) return { text: '' }
    const reader = response.body.getReader()
    const chunks: Uint8Array[] = []
    let size = 0
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
      size += chunk.value.byteLength
      if (size > this.#maxResponseBytes) {
        await reader.cancel()
        return tooLarge()
      }
      chunks.push(chunk.value)
    }
    const bytes = new Uint8Array(size)
    let offset = 0
    for (const chunk of chunks) {
      bytes.set(chunk, offset)
      offset += chunk.byteLength
    }
    return { text: new TextDecoder().decode(bytes) }
  }

  /** The body of a success, parsed exactly and checked; a refusal thrown as its typed error. */
  async #read<T> (call: Call, isExpected: (value: unknown) => value is T, expected: string): Promise<T> {
    const { response, operation, url, text, tooLarge } = call
    if (tooLarge !== undefined) throw tooLarge
    let value: unknown
    try {
      value = text === '' ? undefined : parseExactJson(text)
    } catch {
      value = text
    }
    if (!response.ok) {
      const { status, statusText, headers } = response
      throw refusal({ operation, url, status, statusText, body: value, retryAfter: retryAfterDelay(headers.get('retry-after'), this.#clock.now()) })
    }
    if (!isExpected(value)) {
      throw new UnexpectedResponseError(response.status, `The answer to ${operation} is not ${expected}: ${text.slice(0, 200)}`)
    }
    return value
  }
}
