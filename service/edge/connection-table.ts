// The clock straight from its own module, not through src/service-api.ts: the table loads no Fastify.
import { every, type Clock } from '../../src/service-api.js'

/** What the table reads of a client's socket (a net.Socket), and does to it. */
export interface ClientSocket {
  readonly bytesRead: number
  readonly writableLength: number
  readonly writableEnded: boolean
  end (): void
  destroy (): void
}

/** What it reads of the answer to a request (an http.ServerResponse). */
export interface Answer {
  readonly req: { readonly complete: boolean }
  readonly headersSent: boolean
}

export interface ConnectionTableOptions<S extends ClientSocket> {
  /** The most client connections open at once; 0 for no limit. */
  maxConnections: number
  /** The most of them that have not completed a request with a verifying token; 0 for no limit of their own. */
  maxTokenless: number
  /** The slowest average a request body may arrive at once `bodyRateGrace` has passed, in bytes/s; 0 for no minimum. */
  minBodyRate: number
  /** How long a request body may take before `minBodyRate` applies, in ms. */
  bodyRateGrace: number
  /** The time and the timers of every decision that waits. */
  clock: Clock
  /** Answers 408 on a connection whose request took too long (as Node's own request timeout does), and closes it. */
  timeOut: (socket: S, message: string) => void
}

/** What becomes of a request read on a connection: handled, answered 503 unhandled, or not taken in at all. */
export type Intake = 'taken' | 'shutting down' | 'unread'

/** What the server owes on one client connection. */
interface Connection<S> {
  socket: S
  /** Requests taken in and not answered yet. */
  inFlight: number
  /** The bytes read when the connection last owed nothing: more bytes mean a request has begun. */
  quietAt: number
  /** The answer to the last request taken in. */
  last?: Answer
  /** Closes after its current answer (a request answered before its body came): owes nothing more. */
  ending: boolean
  /** Accepted so recently that the server has not yet read what its client sent: it may not make room. */
  fresh: boolean
  /** When it was accepted (the clock's time). */
  openedAt: number
  /** Accepted while strangers held their whole share: it may stay only as a known client's. */
  overShare: boolean
  /** When the body of the request being read began, and the bytes read then. */
  bodySince: number
  bodyFrom: number
}

// How long a closing connection waits for the client to close its side, in ms.
export const LINGER = 2000
// How many of the oldest strangers are looked at for one that stalls, once one that owes nothing is found.
export const STALLING_SCAN = 64
// A new connection that has sent nothing yet is spared this long: its client's request may be on
// its way (a busy client, a loaded machine); a flood's silent sockets go after it.
export const SILENT_GRACE = 200
// How many times within `bodyRateGrace` the bodies being read are checked: it acts within 10 %.
const BODY_CHECKS_PER_GRACE = 10

/**
 * The server's connections: how many may be open, what their silence means, and how they end at
 * shutdown. It tracks what each connection owes (requests taken in and not answered), so that:
 * - at the connection limit, a connection that owes nothing makes room for a new client, as nginx
 *   reuses its idle connections: silent or idle connections cannot lock clients out. The first to go
 *   are those that never completed an authenticated request (oldest first), and only then those that
 *   did (least recently used first): making room never cuts off a working client for a stranger.
 *   A stranger's claim depends on its progress: one whose request headers have begun but not all
 *   come (slowloris), or whose client does not read the answers written (a pipeline never read), is
 *   owed nothing and goes with the idle strangers: a client without a token keeps a slot only while
 *   its requests are being handled;
 * - strangers may hold at most `maxTokenless` connections, however well they behave, so that the
 *   rest stays for clients with a token: beyond that, a new connection makes room by closing a
 *   stranger's that stalls or owes nothing; when none may go (all busy), the new one is over the
 *   share: a request on it without a verifying token is answered 503 at once (nothing handled,
 *   nginx's limit_conn does the same) and its connection closed;
 * - a request answered before its body came (refused: no token, unknown route, refused type) is
 *   answered with Connection: close and its connection let go, rather than held while the body trickles in;
 * - a body that arrives slower than `minBodyRate` on average, once `bodyRateGrace` has passed, is
 *   answered 408 and its connection closed;
 * - a connection silent for CONNECTION_TIMEOUT is answered 408 if a request had begun on it, and
 *   simply closed if it owed nothing; one whose requests are being handled is left to answer them;
 * - at shutdown, every request taken in is answered, none is handled any more (one read after
 *   that is answered 503 and stores nothing), and each connection closes once it owes nothing,
 *   those accepted until the server stops listening too (Node's close leaves them open).
 * The server's events and hooks are wired to it by service/edge/connections.ts.
 */
export class ConnectionTable<S extends ClientSocket> {
  readonly #open = new Map<S, Connection<S>>()
  // The order in which connections that owe nothing make room: strangers, then the known ones.
  readonly #strangers = new Set<Connection<S>>()
  readonly #known = new Set<Connection<S>>()
  // Connections reading a request body that must keep up with minBodyRate.
  readonly #receiving = new Set<Connection<S>>()
  readonly #options: ConnectionTableOptions<S>
  readonly #stopChecks: () => void
  #closing = false

  constructor (options: ConnectionTableOptions<S>) {
    this.#options = options
    const { minBodyRate, bodyRateGrace, clock } = options
    this.#stopChecks = minBodyRate > 0
      ? every(clock, Math.max(1, Math.floor(bodyRateGrace / BODY_CHECKS_PER_GRACE)), () => this.checkBodies())
      : () => {}
  }

  /** A connection accepted: a stranger's, until a request on it carries a verifying token. */
  admit (socket: S): void {
    const { maxConnections, maxTokenless, clock } = this.#options
    const connection: Connection<S> = {
      socket, inFlight: 0, quietAt: 0, ending: false, fresh: true, openedAt: clock.now(), overShare: false, bodySince: 0, bodyFrom: 0
    }
    this.#open.set(socket, connection)
    this.#strangers.add(connection)
    // Connections are accepted in bursts, and read only at the next turn of the event loop: a new
    // client that already sent its request must not make room for the one accepted after it. At
    // shutdown (begun before or since), that request is answered 503; a connection that sent none closes.
    setImmediate(() => setImmediate(() => {
      connection.fresh = false
      if (this.#closing && connection.inFlight === 0 && !socket.writableEnded && this.#open.has(socket)) this.#closeGently(socket)
    }))
    if (maxTokenless > 0 && this.#strangers.size > maxTokenless) {
      const weak = this.#weakestStranger(false)
      if (weak !== undefined) return this.#evict(weak)
      connection.overShare = true
    }
    if (maxConnections > 0 && this.#open.size >= maxConnections) this.makeRoom()
  }

  /** A connection closed. */
  forget (socket: S): void {
    const connection = this.#open.get(socket)
    if (connection === undefined) return
    this.#open.delete(socket)
    this.#strangers.delete(connection)
    this.#known.delete(connection)
    this.#receiving.delete(connection)
  }

  /** Closes the connection with the weakest claim on its slot, if one may go. */
  makeRoom (): void {
    this.#evict(this.#weakest())
  }

  /** A request on the connection carried a verifying token: its connection is a known client's, used just now. */
  markKnown (socket: S): void {
    const connection = this.#open.get(socket)
    if (connection === undefined) return
    this.#strangers.delete(connection)
    this.#known.delete(connection)
    this.#known.add(connection)
  }

  /** Whether the connection was accepted over the strangers' share and is a stranger's still. */
  isOverShare (socket: S): boolean {
    const connection = this.#open.get(socket)
    return connection !== undefined && connection.overShare && this.#strangers.has(connection)
  }

  /** The connection closes after the answer being sent: it owes nothing more. */
  endAfterAnswer (socket: S): void {
    const connection = this.#open.get(socket)
    if (connection !== undefined) connection.ending = true
  }

  /**
   * A request read on the connection, to be answered with `answer`; `announcesBody` when a body
   * follows its head. Undefined for a request that came through no connection of the server.
   */
  takeIn (socket: S, answer: Answer, announcesBody: boolean): Intake | undefined {
    const connection = this.#open.get(socket)
    if (connection === undefined) return undefined
    if (socket.writableEnded) return 'unread'
    connection.inFlight++
    connection.last = answer
    if (this.#options.minBodyRate > 0 && announcesBody) {
      connection.bodySince = this.#options.clock.now()
      connection.bodyFrom = socket.bytesRead
      this.#receiving.add(connection)
    }
    return this.#closing ? 'shutting down' : 'taken'
  }

  /** The answer to a request taken in on the connection has ended (or the connection was lost). */
  settle (socket: S): void {
    const connection = this.#open.get(socket)
    if (connection === undefined || --connection.inFlight > 0) return
    connection.quietAt = socket.bytesRead
    if (this.#closing) this.#closeGently(socket)
  }

  /** Answers 408 on each connection whose request body is slower than minBodyRate past bodyRateGrace. */
  checkBodies (): void {
    const { minBodyRate, bodyRateGrace, clock } = this.#options
    const now = clock.now()
    for (const connection of this.#receiving) {
      const { last, socket } = connection
      if (last!.req.complete || last!.headersSent) {
        this.#receiving.delete(connection)
        continue
      }
      const allowed = bodyRateGrace + (socket.bytesRead - connection.bodyFrom) * 1000 / minBodyRate
      if (now - connection.bodySince < allowed) continue
      this.#receiving.delete(connection)
      this.#options.timeOut(socket, 'Request body too slow')
    }
  }

  /** The connection was silent for CONNECTION_TIMEOUT: closed, answered 408, or left to answer what it owes. */
  wentSilent (socket: S): void {
    const connection = this.#open.get(socket)
    /* c8 ignore next: a socket leaves the table when it closes, and a closed socket has no timer */
    if (connection === undefined) return socket.destroy()
    if (this.#owesNothing(connection)) return socket.destroy()
    const { inFlight, last } = connection
    const receiving = inFlight === 0 || (inFlight === 1 && !last!.req.complete && !last!.headersSent)
    // The same 408 as Node's own request timeout; nothing was handled, since the request is incomplete.
    if (receiving) return this.#options.timeOut(socket, 'Connection timed out')
    // A client that does not read its answer; otherwise the service is still working on the answers it owes.
    if (socket.writableLength > 0) socket.destroy()
  }

  /**
   * At shutdown: no request is handled any more, and each connection closes once it owes nothing;
   * one just accepted, or accepted until the server stops listening, once what it sent is read.
   */
  drain (): void {
    this.#closing = true
    for (const [socket, connection] of this.#open) if (connection.inFlight === 0 && !connection.fresh) this.#closeGently(socket)
  }

  /** Stops the checks of request bodies. */
  stop (): void {
    this.#stopChecks()
  }

  #owesNothing (connection: Connection<S>): boolean {
    return connection.ending || (connection.inFlight === 0 && connection.socket.bytesRead === connection.quietAt)
  }

  /**
   * Whether a stranger's connection makes no progress worth its slot: its request's headers have
   * begun and are not all read (a request is taken in within the read of its last header line), or
   * its client does not read: answers wait in the socket, or queue behind one (browsers never
   * pipeline; a pipeline that fits the kernel's buffers is answered whole and owes nothing).
   */
  #stalls ({ inFlight, quietAt, socket }: Connection<S>): boolean {
    return (inFlight === 0 && socket.bytesRead !== quietAt) || inFlight > 1 || socket.writableLength > 0
  }

  /**
   * The stranger with the weakest claim on its slot, if one may go: one that stalls, then one that
   * owes nothing (a new client that has not yet sent its request is among those: it goes after
   * every stalling one). Each oldest first, and none so fresh that what its client sent may be unread.
   * One still spared for its silence (SILENT_GRACE) goes only when `orSpared` and no other may.
   */
  #weakestStranger (orSpared: boolean): Connection<S> | undefined {
    const now = this.#options.clock.now()
    let idle: Connection<S> | undefined
    // The oldest of those spared: having sent nothing, it neither stalls nor owes anything.
    let spared: Connection<S> | undefined
    let seen = 0
    for (const connection of this.#strangers) {
      if (connection.fresh) continue
      if (connection.socket.bytesRead === 0 && now - connection.openedAt < SILENT_GRACE) {
        spared ??= connection
        continue
      }
      if (this.#stalls(connection)) return connection
      if (idle === undefined && this.#owesNothing(connection)) idle = connection
      // A flood's connections are the oldest: past these, a flood of idle ones costs no full scan.
      if (++seen >= STALLING_SCAN && idle !== undefined) break
    }
    return idle ?? (orSpared ? spared : undefined)
  }

  /** The connection with the weakest claim on its slot: a stranger's, then a known client's that owes nothing, least recently used first. */
  #weakest (): Connection<S> | undefined {
    // A stranger, even one still spared for its silence, goes before a known client's connection.
    const stranger = this.#weakestStranger(true)
    if (stranger !== undefined) return stranger
    for (const connection of this.#known) if (!connection.fresh && this.#owesNothing(connection)) return connection
  }

  /** Closes a connection, which at once stops counting among those that may make room. */
  #evict (connection: Connection<S> | undefined): void {
    if (connection === undefined) return
    this.#strangers.delete(connection)
    this.#known.delete(connection)
    connection.socket.destroy()
  }

  /**
   * Half-closes a connection that owes nothing, then reads on until the client closes its side:
   * closing with unread bytes (a client's pipelined requests) would reset the connection and could
   * lose the answers just written. A client that never closes is cut off after LINGER.
   */
  #closeGently (socket: S): void {
    socket.end()
    this.#options.clock.schedule(() => socket.destroy(), LINGER)
  }
}
