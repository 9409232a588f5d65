/**
 * One gateway's sync stream as the hub (hub.ts) keeps it: what was sent and acked, whether a push
 * is under way, its lease and share; and writing whole lines to it.
 */
import type { ServerResponse } from 'node:http';
import { CodedError } from '../../protocol/coded-error';

export interface Connection {
  gatewayId: string;
  res: ServerResponse;
  /** Last version written to the stream (0: nothing yet). */
  sentVersion: number;
  /** Digest of each version sent and not yet acked. */
  sent: Map<number, string>;
  appliedVersion: number;
  busy: boolean;
  dirty: boolean;
  needsFull: boolean;
  /** Highest version this gateway refused; never sent again. */
  nackedVersion: number;
  closed: boolean;
  /** When it last acked or renewed its lease (ms); null until it has. */
  leaseAt: number | null;
  /** The share last written to its stream; null until one was. */
  share: number | null;
  /**
   * The gateway instance it announced (protocol/budgets.ts): it holds prepaid budgets and takes
   * keys' accounts. Null for a gateway older than prepaid billing, sent the legacy form.
   */
  instance: string | null;
  /** The coverage line last written to its stream (hub.ts), to write only what changed; null until one was. */
  coverageLine: string | null;
  /** When that line was written (ms). */
  coverageAt: number;
}

/** A stream just opened: nothing sent yet; `nackedVersion`, the highest version the gateway ever refused. */
export function newConnection(gatewayId: string, res: ServerResponse, nackedVersion: number, instance: string | null = null): Connection {
  return {
    gatewayId,
    res,
    sentVersion: 0,
    sent: new Map(),
    appliedVersion: 0,
    busy: false,
    dirty: false,
    needsFull: false,
    nackedVersion,
    closed: false,
    leaseAt: null,
    share: null,
    instance,
    coverageLine: null,
    coverageAt: 0,
  };
}

/** A gateway's sync stream closed before a write to it finished. */
export class StreamClosedError extends CodedError {
  override readonly code = 'SVC_ERR_STREAM_CLOSED';

  constructor() {
    super('gateway stream closed');
  }
}

/** Write whole lines (each ending in a newline), waiting for the stream to drain when it is full. */
export function sendLines(conn: Connection, chunk: string | Buffer): Promise<void> {
  if (conn.closed) return Promise.reject(new StreamClosedError());
  if (conn.res.write(chunk)) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const onDrain = () => {
      conn.res.off('close', onClose);
      resolve();
    };
    const onClose = () => {
      conn.res.off('drain', onDrain);
      reject(new StreamClosedError());
    };
    conn.res.once('drain', onDrain);
    conn.res.once('close', onClose);
  });
}
