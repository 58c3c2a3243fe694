import { createHash, timingSafeEqual } from 'node:crypto'
import { chmod, rm } from 'node:fs/promises'
import { createServer, type Server, type Socket } from 'node:net'
import type { PGlite } from '@electric-sql/pglite'

// Startup-phase request codes (first message of a connection, no type byte).
const SSL_REQUEST = 80877103
const GSSENC_REQUEST = 80877104
const CANCEL_REQUEST = 80877102
// Frontend message types that end a unit of work: Sync ends an extended-protocol batch, Query is a whole
// simple-protocol statement, Terminate ends the connection.
const SYNC = 0x53 // 'S'
const QUERY = 0x51 // 'Q'
const TERMINATE = 0x58 // 'X'
// The client's answer to an authentication request (PasswordMessage).
const PASSWORD = 0x70 // 'p'
// Before a client has authenticated, no message of it may be longer than this: a stranger's bytes are not buffered.
const MAX_UNAUTHENTICATED_MESSAGE = 8192

/**
 * Where the server listens: a Unix socket (`path`; its directory is the caller's to keep private), or a TCP port
 * on `host` (0: an ephemeral one).
 */
export type WireListen = { path: string } | { host: string; port: number }
export type WireAddress = { path: string } | { host: string; port: number }

/** Work the server does on the session itself: `run` when its turn comes, `abandon` if the server stops first. */
interface Chore {
  run(): Promise<void>
  abandon(): void
}

interface Connection {
  id: number
  socket: Socket
  /** Bytes received and not yet cut into messages, as they came (joined only once a message is complete). */
  received: Buffer[]
  receivedBytes: number
  /** Bytes the message being received needs in all, once its header is in; 0 when unknown. */
  needed: number
  started: boolean
  /** The startup message, held back until the client has given the password; null before it arrives. */
  startup: Buffer | null
  authenticated: boolean
  /** Messages of the unit being received (e.g. Parse, Bind, Execute, before its Sync). */
  pending: Buffer[]
  /** Complete units waiting for their turn, in arrival order. */
  units: Buffer[][]
  running: boolean
  closed: boolean
  /** Whether it ever prepared a named statement (then its statements are deallocated when it leaves). */
  prepared: boolean
}

/**
 * Serves one PGlite (a single-session PostgreSQL) to several wire-protocol clients, correctly.
 *
 * `@electric-sql/pglite-socket` interleaves clients message by message; with the extended protocol that is
 * unsafe: client B's Bind can land between client A's Parse and Bind and bind A's unnamed statement. Here a
 * client's messages run as whole units (through its Sync, or one simple Query), and a client inside an open
 * transaction keeps the session until the transaction ends, so every client sees PostgreSQL semantics: its
 * statements are its own, and transactions are serialized (which is what PGlite can offer).
 *
 * A unit goes to PGlite in one call (PostgreSQL's main loop runs every message in it, skipping to Sync after an
 * error as it would on a socket), and its answer goes back in one write: per message, the call, the mutex and the
 * syscalls cost more than the message. PGlite hands its output over as views into its WebAssembly memory, which
 * the next statement overwrites (or a memory growth detaches), so the answer is copied out before it is queued
 * on a socket that may not take it at once.
 *
 * PGlite's session is a superuser's, so no client gets one without the password the server was started with
 * (PostgreSQL's cleartext password exchange: the socket is local, a Unix socket or loopback). A client that gives
 * another, or none, is refused as PostgreSQL refuses it (28P01) before any of its bytes reach the database.
 */
export class PGliteWireServer {
  private server: Server | null = null
  private readonly connections = new Set<Connection>()
  /** The connection that holds the session: mid-unit, or inside an open transaction. */
  private owner: Connection | null = null
  private busy = false
  private nextId = 1
  private lastServed = 0
  /** Work of the server's own (a departed client's statements, maintenance): run while no transaction is open. */
  private readonly chores: Chore[] = []
  /** Whether the session last ran a chore: chores and clients' units take turns. */
  private choreRanLast = false
  private stopped = false

  constructor(
    private readonly db: PGlite,
    private readonly options: { listen: WireListen; maxConnections: number; password: string },
  ) {
    if (options.password.length === 0) throw new Error('the embedded database server needs a password')
    this.passwordDigest = digest(Buffer.from(options.password, 'utf8'))
  }

  private readonly passwordDigest: Buffer

  async start(): Promise<WireAddress> {
    await this.db.waitReady
    const server = createServer((socket) => this.accept(socket))
    server.maxConnections = this.options.maxConnections
    this.server = server
    const { listen } = this.options
    // A socket file left by a process that was killed would make listen fail (EADDRINUSE); the data dir's lock
    // says no other process serves it.
    if ('path' in listen) await rm(listen.path, { force: true })
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      if ('path' in listen) server.listen(listen.path, () => resolve())
      else server.listen(listen.port, listen.host, () => resolve())
    })
    if ('path' in listen) {
      await chmod(listen.path, 0o600)
      return { path: listen.path }
    }
    const address = server.address()
    if (address === null || typeof address === 'string')
      throw new Error('embedded database did not bind a TCP port')
    return { host: listen.host, port: address.port }
  }

  async stop(): Promise<void> {
    for (const connection of this.connections) connection.socket.destroy()
    const server = this.server
    this.server = null
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()))
    // Let a unit that was mid-flight finish before the database is closed underneath it.
    while (this.busy) await new Promise((resolve) => setTimeout(resolve, 5))
    this.stopped = true
    for (const chore of this.chores.splice(0)) chore.abandon()
  }

  private accept(socket: Socket): void {
    socket.setNoDelay(true)
    const connection: Connection = {
      id: this.nextId++,
      socket,
      received: [],
      receivedBytes: 0,
      needed: 0,
      started: false,
      startup: null,
      authenticated: false,
      pending: [],
      units: [],
      running: false,
      closed: false,
      prepared: false,
    }
    this.connections.add(connection)
    socket.on('data', (chunk) => this.receive(connection, chunk))
    socket.on('error', () => socket.destroy())
    socket.on('close', () => void this.drop(connection))
  }

  private receive(connection: Connection, chunk: Buffer): void {
    connection.received.push(chunk)
    connection.receivedBytes += chunk.length
    // A message spread over many chunks (a large parameter) is joined once, when its last byte is in: joining on
    // every chunk would copy it over and over.
    if (connection.receivedBytes < connection.needed) return
    let buffer =
      connection.received.length === 1
        ? connection.received[0]!
        : Buffer.concat(connection.received, connection.receivedBytes)
    connection.needed = 0
    // Messages are views into the received bytes: nothing is copied until a unit runs.
    for (;;) {
      if (connection.closed) return
      const next = this.nextMessage(connection, buffer)
      if (next === null) break
      buffer = next.rest
      const { message } = next
      if (message === 'handled') continue
      if (connection.started && message[0] === PARSE && message[5] !== 0) connection.prepared = true
      connection.pending.push(connection.started ? ownStatementNames(message, connection.id) : message)
      const type = connection.started ? message[0] : -1
      if (!connection.started || type === SYNC || type === QUERY || type === TERMINATE) {
        connection.started = true
        connection.units.push(connection.pending)
        connection.pending = []
      }
    }
    connection.received = buffer.length > 0 ? [buffer] : []
    connection.receivedBytes = buffer.length
    void this.pump()
  }

  /**
   * One complete message off the front of `buffer` ('handled' for startup requests answered here) and what
   * follows it, or null for "need more" (noting how much more in `connection.needed` once the length is known).
   */
  private nextMessage(
    connection: Connection,
    buffer: Buffer,
  ): { message: Buffer | 'handled'; rest: Buffer } | null {
    if (connection.startup !== null && !connection.authenticated) return this.password(connection, buffer)
    if (!connection.started) {
      if (buffer.length < 8) return null
      const length = buffer.readInt32BE(0)
      if (length < 8 || length > MAX_UNAUTHENTICATED_MESSAGE) {
        this.refuse(connection, '08P01', 'invalid startup packet length')
        return null
      }
      if (buffer.length < length) {
        connection.needed = length
        return null
      }
      const code = buffer.readInt32BE(4)
      const rest = buffer.subarray(length)
      if (code === SSL_REQUEST || code === GSSENC_REQUEST) {
        connection.socket.write('N') // no TLS on the loopback socket
        return { message: 'handled', rest }
      }
      if (code === CANCEL_REQUEST) {
        connection.socket.destroy()
        return { message: 'handled', rest }
      }
      // The startup message waits for the password: the client is asked for it first.
      connection.startup = Buffer.from(buffer.subarray(0, length))
      connection.socket.write(AUTHENTICATION_CLEARTEXT_PASSWORD)
      return { message: 'handled', rest }
    }
    if (buffer.length < 5) return null
    const length = 1 + buffer.readInt32BE(1)
    if (buffer.length < length) {
      connection.needed = length
      return null
    }
    return { message: buffer.subarray(0, length), rest: buffer.subarray(length) }
  }

  /**
   * The client's answer to the password request: a right password lets its held startup message through (it
   * becomes the connection's first unit); anything else closes the connection with PostgreSQL's error.
   */
  private password(connection: Connection, buffer: Buffer): { message: Buffer; rest: Buffer } | null {
    if (buffer.length < 5) return null
    const length = 1 + buffer.readInt32BE(1)
    if (buffer[0] !== PASSWORD || length < 5 || length > MAX_UNAUTHENTICATED_MESSAGE) {
      this.refuse(connection, '28P01', 'password authentication failed for user "postgres"')
      return null
    }
    if (buffer.length < length) {
      connection.needed = length
      return null
    }
    // The password is a C string: everything up to its terminating zero.
    const given = buffer.subarray(5, length - 1)
    if (!timingSafeEqual(digest(given), this.passwordDigest)) {
      this.refuse(connection, '28P01', 'password authentication failed for user "postgres"')
      return null
    }
    connection.authenticated = true
    return { message: connection.startup!, rest: buffer.subarray(length) }
  }

  /** Ends a connection that has not authenticated, telling the client why as PostgreSQL would. */
  private refuse(connection: Connection, code: string, message: string): void {
    connection.closed = true
    connection.socket.end(errorResponse(code, message))
  }

  /** Runs the next unit whose connection may use the session now. */
  private async pump(): Promise<void> {
    if (this.busy || this.stopped) return
    if (
      this.owner === null &&
      this.chores.length > 0 &&
      !(this.choreRanLast && this.unitWaiting()) &&
      !this.db.isInTransaction()
    ) {
      await this.runChore()
      return
    }
    const next = this.pickNext()
    if (!next) return
    this.choreRanLast = false
    this.busy = true
    next.running = true
    const unit = next.units.shift()!
    try {
      // Terminate only ever ends a unit. destroy, not end: a client that never closes its side must not keep the
      // session (the close handler rolls back whatever it left open).
      const terminates = next.started && unit[unit.length - 1]![0] === TERMINATE
      const messages = terminates ? unit.slice(0, -1) : unit
      if (messages.length > 0 && !next.closed) {
        const input = messages.length === 1 ? messages[0]! : Buffer.concat(messages)
        const output: Buffer[] = []
        await this.db.runExclusive(() =>
          this.db.execProtocolRawStream(input, {
            onRawData: (data: Uint8Array) => {
              if (data.length > 0) output.push(Buffer.from(data))
            },
          }),
        )
        if (!next.closed) send(next.socket, output)
      }
      if (terminates) next.socket.destroy()
    } catch {
      next.socket.destroy()
    } finally {
      next.running = false
      this.owner = this.db.isInTransaction() && !next.closed ? next : null
      if (next.closed) await this.rollbackIfOwned()
      this.busy = false
      void this.pump()
    }
  }

  private pickNext(): Connection | null {
    if (this.owner) return this.owner.units.length > 0 ? this.owner : null
    // Round robin from the connection after the last one served, so no client starves under saturation
    // (connections iterate in id order: ids grow with arrival).
    let first: Connection | null = null
    for (const connection of this.connections) {
      if (connection.units.length === 0 || connection.running) continue
      if (connection.id > this.lastServed) {
        this.lastServed = connection.id
        return connection
      }
      first ??= connection
    }
    if (first) this.lastServed = first.id
    return first
  }

  /**
   * Runs `task` on the session between units, while no client holds a transaction open, and resolves with its
   * result (the embedded database's maintenance uses it: VACUUM cannot run inside a transaction).
   */
  whenIdle<T>(task: (db: PGlite) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const stopped = () => reject(new Error('the embedded database server has stopped'))
      if (this.stopped) {
        stopped()
        return
      }
      this.chores.push({
        run: () => Promise.resolve(this.db).then(task).then(resolve, reject),
        abandon: stopped,
      })
      void this.pump()
    })
  }

  /** Whether a client's unit could run now (asked only while no client holds the session). */
  private unitWaiting(): boolean {
    for (const connection of this.connections)
      if (connection.units.length > 0 && !connection.running) return true
    return false
  }

  /** Runs one chore; the next turn goes to a waiting client's unit, if any. */
  private async runChore(): Promise<void> {
    this.busy = true
    this.choreRanLast = true
    try {
      await this.chores.shift()!.run()
      // A chore must leave the session as it found it: outside any transaction.
      if (this.db.isInTransaction()) await this.db.exec('ROLLBACK').catch(() => {})
    } finally {
      this.busy = false
      // Once the loop has polled its sockets (two turns: the first may come before the poll): a client's bytes
      // that arrived meanwhile are read first, and get the next turn.
      setImmediate(() => setImmediate(() => void this.pump()))
    }
  }

  private async drop(connection: Connection): Promise<void> {
    connection.closed = true
    connection.units = []
    this.connections.delete(connection)
    if (this.stopped) return // the database is closing: nothing to clean up in it
    // Its prepared statements would otherwise stay in the one session for good: a pool that replaces its
    // connections now and then would grow the database's memory without bound.
    if (connection.prepared)
      this.chores.push({ run: () => this.deallocate(connection.id), abandon: () => {} })
    if (this.owner === connection && !connection.running) {
      this.owner = null
      await this.rollbackIfOwned()
    }
    void this.pump()
  }

  private async deallocate(connectionId: number): Promise<void> {
    const prefix = statementPrefix(connectionId)
    try {
      const { rows } = await this.db.query<{ name: string }>(
        'SELECT name FROM pg_prepared_statements WHERE starts_with(name, $1)',
        [prefix],
      )
      if (rows.length > 0)
        await this.db.exec(rows.map(({ name }) => `DEALLOCATE "${name.replaceAll('"', '""')}";`).join(' '))
    } catch {
      // Left for good only if the database itself failed; nothing a client waits on.
    }
  }

  /** A client that vanished mid-transaction must not leave the single session inside it. */
  private async rollbackIfOwned(): Promise<void> {
    if (this.db.isInTransaction()) {
      const wasBusy = this.busy
      this.busy = true
      try {
        // exec() takes PGlite's own lock; wrapping it in runExclusive would deadlock.
        await this.db.exec('ROLLBACK')
      } finally {
        this.busy = wasBusy
      }
    }
  }
}

/** One unit's answer in one syscall (writev when PostgreSQL flushed it in several pieces). */
const PARSE = 0x50 // 'P'
const BIND = 0x42 // 'B'
const DESCRIBE = 0x44 // 'D'
const CLOSE = 0x43 // 'C'
const STATEMENT = 0x53 // 'S', in Describe and Close

/**
 * Gives each client its own prepared statements, as PostgreSQL does per connection: in the session all clients
 * share, a named statement of client 7 is `c7:name`, so two clients preparing the same name do not clash (the
 * unnamed statement needs nothing: a unit runs whole). Rewrites the name in Parse, Bind, and Describe or Close of
 * a statement; every other message passes as is.
 */
function ownStatementNames(message: Buffer, connectionId: number): Buffer {
  const type = message[0]
  let at: number
  if (type === PARSE) at = 5
  else if (type === BIND)
    at = message.indexOf(0, 5) + 1 // after the portal's name
  else if ((type === DESCRIBE || type === CLOSE) && message[5] === STATEMENT) at = 6
  else return message
  if (at <= 0 || message[at] === 0) return message // malformed, or the unnamed statement
  const prefix = Buffer.from(statementPrefix(connectionId))
  const renamed = Buffer.concat([message.subarray(0, at), prefix, message.subarray(at)])
  renamed.writeInt32BE(renamed.length - 1, 1)
  return renamed
}

// AuthenticationCleartextPassword: 'R', length 8, code 3.
const AUTHENTICATION_CLEARTEXT_PASSWORD = Buffer.from([0x52, 0, 0, 0, 8, 0, 0, 0, 3])

/** Compared as digests, so the comparison takes the same time whatever the length of what was given. */
function digest(bytes: Uint8Array): Buffer {
  return createHash('sha256').update(bytes).digest()
}

/** A FATAL ErrorResponse: severity, SQLSTATE and message fields. */
function errorResponse(code: string, message: string): Buffer {
  const fields = Buffer.concat([
    Buffer.from(`SFATAL\0VFATAL\0C${code}\0M${message}\0`, 'utf8'),
    Buffer.from([0]),
  ])
  const header = Buffer.alloc(5)
  header[0] = 0x45 // 'E'
  header.writeInt32BE(4 + fields.length, 1)
  return Buffer.concat([header, fields])
}

function statementPrefix(connectionId: number): string {
  return `c${connectionId}:`
}

function send(socket: Socket, output: Buffer[]): void {
  if (output.length === 0) return
  if (output.length === 1) {
    socket.write(output[0]!)
    return
  }
  socket.cork()
  for (const piece of output) socket.write(piece)
  socket.uncork()
}
