/**
 * The undici engine's connections (`undici.ts` is the engine): one undici `Client` with
 * pipelining 1 per upstream connection, pooled per origin with at most `maxSockets` connections
 * and at most `maxFreeSockets` idle ones, most recently used first, and the calls waiting for one.
 *
 * The engine keeps this pool instead of undici's `Pool` because it needs two things `Pool` does
 * not give: a call that waits for a connection is dropped without any effect on the upstream
 * when its caller leaves, and a call on a connection is stopped by destroying that connection
 * itself (see `UndiciCall.abortUpstream`), which needs to know which connection carries it.
 */
import type { Socket } from 'node:net';
import { Client, buildConnector } from 'undici';

/** One upstream connection. */
export interface Conn {
  readonly client: Client;
  /** The socket the Client holds now (null before its first connect). */
  socket: Socket | null;
  /** The next bytes read from the socket start an answer (a call was written on it). */
  atHead: boolean;
  /** Bytes of an informational answer's head read before its end arrived. */
  held: Buffer | null;
}

/** A call that can be put on a connection once one is free. */
export interface Waiter {
  dispatch(conn: Conn): void;
}

export interface PoolLimits {
  maxSockets: number;
  maxFreeSockets: number;
}

const ignore = (): void => {};

/** One upstream origin: its connections and the calls waiting for one. */
export class OriginPool<W extends Waiter> {
  /** Connections without a call, the most recently used last. */
  private readonly idle: Conn[] = [];
  private readonly all = new Set<Conn>();
  /** Connections carrying a call (or being opened for one). */
  busy = 0;
  /** Calls waiting for a connection, oldest first. */
  readonly waiting = new Set<W>();

  constructor(
    readonly url: string,
    private readonly limits: PoolLimits,
    private readonly options: Client.Options,
    private readonly connector: buildConnector.connector,
  ) {}

  /** A connection for a new call: an idle one, else a new one while under `maxSockets`; null: wait. */
  acquire(): Conn | null {
    const conn = this.idle.pop() ?? (this.all.size < this.limits.maxSockets ? this.open() : null);
    if (conn !== null) this.busy++;
    return conn;
  }

  /** The call on `conn` is over (undici is done with it): the oldest waiting call gets `conn`, or it idles. */
  release(conn: Conn): void {
    if (conn.client.destroyed) {
      this.busy--;
      this.all.delete(conn);
      return;
    }
    for (const next of this.waiting) {
      this.waiting.delete(next);
      next.dispatch(conn);
      return;
    }
    this.busy--;
    if (this.idle.length < this.limits.maxFreeSockets) this.idle.push(conn);
    else {
      // As many idle connections as `maxFreeSockets` already: close this one, as Node's agent does.
      this.all.delete(conn);
      conn.client.destroy().catch(ignore);
    }
  }

  /** Idle connections with an open socket. */
  freeSockets(): number {
    let n = 0;
    for (const conn of this.idle) if (conn.socket !== null && !conn.socket.destroyed) n++;
    return n;
  }

  /** Destroy every connection (calls on them fail); returns the calls that were waiting. */
  destroy(): W[] {
    const waiting = [...this.waiting];
    this.waiting.clear();
    this.idle.length = 0;
    for (const conn of this.all) conn.client.destroy().catch(ignore);
    return waiting;
  }

  private open(): Conn {
    const conn: Conn = { client: null as unknown as Client, socket: null, atHead: false, held: null };
    const connect = (opts: buildConnector.Options, callback: buildConnector.Callback): void => {
      this.connector(opts, (err, socket) => {
        conn.socket = socket ?? null;
        conn.atHead = false;
        conn.held = null;
        if (conn.socket !== null) skipInformational(conn, conn.socket);
        (callback as (err: Error | null, socket: Socket | null) => void)(err, conn.socket);
      });
    };
    (conn as { client: Client }).client = new Client(this.url, { ...this.options, connect });
    // A handler that throws in onError makes a Client emit 'error': never let that end the process.
    (conn.client as unknown as NodeJS.EventEmitter).on('error', ignore);
    this.all.add(conn);
    return conn;
  }
}

/** Heads of informational answers larger than this are left to undici (which fails them). */
const MAX_INFORMATIONAL_HEAD = 16 * 1024;
const HEAD_END = Buffer.from('\r\n\r\n', 'latin1');
const STATUS_LINE = Buffer.from('HTTP/1.? 1?? ', 'latin1');
const isDigit = (c: number): boolean => c >= 0x30 && c <= 0x39;

/**
 * The length of a complete informational head (1xx other than 101) at the start of `data`, 0
 * when `data` starts with anything else, -1 when it cannot tell yet.
 */
export function informationalHead(data: Buffer): number {
  for (let i = 0; i < STATUS_LINE.length; i++) {
    if (i >= data.length) return -1;
    const c = data[i]!;
    if (i === 7 || i === 10 || i === 11) {
      if (!isDigit(c)) return 0;
    } else if (i === 12) {
      if (c !== 0x20 && c !== 0x0d) return 0; // SP, or CR when the reason phrase is empty
    } else if (c !== STATUS_LINE[i]) return 0;
  }
  if (data[10] === 0x30 && data[11] === 0x31) return 0; // 101 Switching Protocols is not skipped
  const end = data.indexOf(HEAD_END, 12);
  if (end >= 0) return end + HEAD_END.length;
  return data.length > MAX_INFORMATIONAL_HEAD ? 0 : -1;
}

/**
 * Take informational answers (1xx but 101) out of what undici's parser reads at the start of an
 * answer. RFC 9110 §15.2 has a client skip 1xx answers it did not expect, and Node's client (the
 * http-proxy engine) does; undici's parser fails a call whose upstream sends `100 Continue`
 * unasked (it never sends `Expect`, and neither does the gateway). The gateway passes no 1xx on
 * to callers on either engine. Only the first bytes of each answer are looked at.
 */
function skipInformational(conn: Conn, socket: Socket): void {
  const read = socket.read.bind(socket);
  socket.read = (size?: number): Buffer | null => {
    if (!conn.atHead) return read(size) as Buffer | null;
    let data = read(size) as Buffer | null;
    if (conn.held !== null) {
      data = data === null ? conn.held : Buffer.concat([conn.held, data]);
      conn.held = null;
    }
    while (data !== null && data.length > 0) {
      const head = informationalHead(data);
      if (head === 0) {
        conn.atHead = false;
        return data;
      }
      if (head < 0) {
        conn.held = data; // the rest of this head is still on its way
        return null;
      }
      data = data.subarray(head);
    }
    return null;
  };
}
