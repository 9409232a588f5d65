/**
 * The connection a PostgreSQL store LISTENs on for the state versions other processes commit
 * (`PgStore` announces each bump with `NOTIFY` on `VERSION_CHANNEL` in the transaction that
 * makes it). One dedicated connection, outside the pool; when it drops it is opened again,
 * backing off from `LISTEN_RETRY_MS` up to `LISTEN_RETRY_MAX_MS`, and every (re)opening hands
 * on the database's current version, so a change committed while nobody listened is not missed.
 * It also LISTENs on `GATEWAYS_CHANNEL`, for the controls sharing the database (`ClusterTable.onGateways`).
 */
import type { Client, Notification } from 'pg';
import { PgClient } from './client';
import type { GatewaysEvent } from '../cluster';
import { GATEWAYS_CHANNEL } from '../gateways';

/** The channel a committed state version is announced on; the payload is the version. */
export const VERSION_CHANNEL = 'svc_state_version';
/** First wait before a dropped listening connection is opened again; doubles up to the max. @default 250 */
export const LISTEN_RETRY_MS = 250;
/** Longest wait between attempts to open the listening connection again. @default 5000 */
export const LISTEN_RETRY_MAX_MS = 5_000;

export interface VersionListenerOptions {
  url: string;
  /** The database's current version, read when the connection (re)opens. */
  current: () => Promise<number>;
  /** Told every version announced or read (the store deduplicates them). */
  heard: (version: number) => void;
  /**
   * Told every gateways announcement, and `{kind: 'member', from: null}` on every (re)opening:
   * what was announced while nobody listened is unknown, so the listener re-reads.
   */
  heardGateways?: (event: GatewaysEvent) => void;
  /** @default LISTEN_RETRY_MS */
  retryMs?: number;
}

/** A `GATEWAYS_CHANNEL` payload read, or null when it is not one. */
export function parseGatewaysEvent(payload: string | undefined): GatewaysEvent | null {
  const match = /^(ack|member):(.*)$/s.exec(payload ?? '');
  return match ? { kind: match[1] as GatewaysEvent['kind'], from: match[2] === '' ? null : match[2]! } : null;
}

export class VersionListener {
  private readonly opts: VersionListenerOptions;
  /** The connection LISTENing; null while it is being opened again. */
  private client: Client | null = null;
  private retry: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(opts: VersionListenerOptions) {
    this.opts = opts;
  }

  /**
   * Open the connection, `LISTEN` on the version channel, then hand on the current version.
   * Throws when the connection cannot be opened.
   */
  async open(): Promise<void> {
    const client = new PgClient({ connectionString: this.opts.url, application_name: 'svc-control-listen' });
    const dropped = () => this.drop(client);
    client.on('error', dropped);
    client.on('end', dropped);
    client.on('notification', (msg: Notification) => {
      if (msg.channel === GATEWAYS_CHANNEL) {
        const event = parseGatewaysEvent(msg.payload);
        if (event !== null) this.opts.heardGateways?.(event);
        return;
      }
      const version = Number(msg.payload);
      if (msg.channel === VERSION_CHANNEL && Number.isSafeInteger(version)) this.opts.heard(version);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${VERSION_CHANNEL}; LISTEN ${GATEWAYS_CHANNEL}`);
    } catch (err) {
      client.removeListener('end', dropped);
      await client.end().catch(() => undefined);
      throw err;
    }
    if (this.closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    this.opts.heardGateways?.({ kind: 'member', from: null });
    this.opts.heard(await this.opts.current());
  }

  /** The listening connection's server process id, or null while it is being opened again. */
  get pid(): number | null {
    // node-postgres sets `processID` once connected; its type declarations leave it out.
    return (this.client as unknown as { processID?: number | null } | null)?.processID ?? null;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retry !== null) clearTimeout(this.retry);
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => undefined);
  }

  /** The connection failed or ended: open another (unless closing). */
  private drop(client: Client): void {
    if (this.client !== client) return;
    this.client = null;
    void client.end().catch(() => undefined);
    this.again(this.opts.retryMs ?? LISTEN_RETRY_MS);
  }

  private again(delayMs: number): void {
    if (this.closed || this.retry !== null) return;
    this.retry = setTimeout(() => {
      this.retry = null;
      this.open().catch(() => this.again(Math.min(delayMs * 2, LISTEN_RETRY_MAX_MS)));
    }, delayMs);
    this.retry.unref();
  }
}
