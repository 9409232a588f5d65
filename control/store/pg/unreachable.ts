/**
 * Which failures of node-postgres mean the database cannot be reached, as opposed to a
 * statement the server refused: those become one `StoreUnavailableError` (503
 * `svc_store_unavailable`, `../unavailable.ts`), every other error is left as it is.
 *
 * Cannot be reached:
 * - the connection could not be made: refused (`ECONNREFUSED`: the server is stopped), the
 *   host unknown or its name not resolved now (`ENOTFOUND`, `EAI_AGAIN`), no route or no answer
 *   (`EHOSTUNREACH`, `ENETUNREACH`, `ETIMEDOUT`), no unix socket (`ENOENT` on connect);
 * - the connection broke: reset or cut (`ECONNRESET`, `EPIPE`), or ended under a statement
 *   (node-postgres' "Connection terminated unexpectedly", a client no longer queryable);
 * - the server ends or refuses sessions: SQLSTATE class 08 (connection exception, but 08P01,
 *   a protocol violation, a bug rather than an outage), 57P01 (admin shutdown: a fast
 *   shutdown or a terminated backend), 57P02 (crash shutdown), 57P03 (cannot connect now: the
 *   server is starting or stopping), 53300 (too many connections).
 *
 * @see https://www.postgresql.org/docs/current/errcodes-appendix.html
 */
import type { Pool } from 'pg';
import { databaseUrlSecrets, maskDatabaseUrl } from '../../../protocol/database-url';
import { StoreUnavailableError } from '../unavailable';

/** Node's network errors that mean no connection to the server. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EHOSTDOWN',
  'ENETDOWN',
]);
/** SQLSTATEs (beyond class 08) of a server that ends or refuses sessions. */
const SERVER_CODES = new Set(['57P01', '57P02', '57P03', '53300']);
/** node-postgres' own messages (no code) for a connection that ended or could not be made in time. */
const DRIVER_MESSAGES = /^(Connection terminated|Client has encountered a connection error|timeout exceeded when trying to connect)/;

interface ErrorLike {
  code?: unknown;
  syscall?: unknown;
  message?: unknown;
  errors?: unknown;
}

/** Whether `err` says the database cannot be reached (the list above). */
export function isUnreachable(err: unknown): boolean {
  if (err === null || typeof err !== 'object') return false;
  const e = err as ErrorLike;
  const code = typeof e.code === 'string' ? e.code : '';
  if (NETWORK_CODES.has(code)) return true;
  if (code === 'ENOENT' && e.syscall === 'connect') return true;
  if (SERVER_CODES.has(code) || (code.startsWith('08') && code.length === 5 && code !== '08P01')) return true;
  if (typeof e.message === 'string' && DRIVER_MESSAGES.test(e.message)) return true;
  // Every address of a name refused (Node tries each: `localhost` is ::1 and 127.0.0.1).
  return Array.isArray(e.errors) && e.errors.length > 0 && e.errors.every(isUnreachable);
}

/** What failed, in the driver's words, with the URL's secrets taken out. */
function reasonOf(err: ErrorLike, url: string): string {
  const code = typeof err.code === 'string' ? err.code : '';
  let message = typeof err.message === 'string' ? err.message : '';
  for (const secret of databaseUrlSecrets(url)) message = message.split(secret).join('***');
  if (message === '') return code === '' ? 'connection failed' : code;
  return code !== '' && !message.includes(code) ? `${message} (${code})` : message;
}

/**
 * `err` as the store throws it: a `StoreUnavailableError` naming `pool`'s database (masked)
 * when the database cannot be reached, else `err` itself.
 */
export function unreachable(err: unknown, pool: Pool): unknown {
  if (err instanceof StoreUnavailableError || !isUnreachable(err)) return err;
  const url = pool.options.connectionString ?? '';
  return new StoreUnavailableError({ kind: 'postgres', url: maskDatabaseUrl(url), reason: reasonOf(err as ErrorLike, url) }, err);
}
