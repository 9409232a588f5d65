/**
 * First-start bootstrap of the data dir: the directory itself (0700), the control's id
 * (`control-id`, `ctl_…`, made once: what the other controls on a shared database and the status
 * answers know this one by), and the admin, sync and metrics tokens (`admin.token`,
 * `sync.token`, `metrics.token`, 0600) unless they are configured. Returns where each token came
 * from so start-up can say so once.
 */
import { createHash, randomBytes } from 'node:crypto';
import { chmodSync, closeSync, fsyncSync, mkdirSync, openSync, readFileSync, statSync, writeSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Config } from '../config/load';
import { encodeBase58 } from '../protocol/base58';
import { CodedError } from '../protocol/coded-error';
import { METRICS_TOKEN_FILE } from '../protocol/bearer';
import { newId } from '../protocol/keys';

export const ADMIN_TOKEN_FILE = 'admin.token';
export const SYNC_TOKEN_FILE = 'sync.token';
export const DATABASE_FILE = 'control.db';
/** The file holding this control's id, made on first start. */
export const CONTROL_ID_FILE = 'control-id';
/** A control's id: `ctl_` and 12 base58 characters (`newId`). */
export const CONTROL_ID_PATTERN = /^ctl_[1-9A-HJ-NP-Za-km-z]{12}$/;

/** One token as this control has it: where it came from, and what requests are checked against. */
export interface BootstrapToken {
  /**
   * The token; null on a control that joined a PostgreSQL database whose first control made it
   * (`from`): this one knows only its digest.
   */
  token: string | null;
  /** The file holding it in this data dir; null when it is configured, or made by another control. */
  file: string | null;
  /** Whether this start wrote the file. */
  created: boolean;
  /** SHA-256 of the token: what the bearer tokens of requests are compared with. */
  digest: Buffer;
  /** On a shared PostgreSQL database, the control that made the token and where it wrote it (null: configured there). */
  from?: { control_id: string; file: string | null };
}

export interface BootstrapResult {
  dataDir: string;
  /** This control's id (`ctl_…`), kept in `<dataDir>/control-id`. */
  controlId: string;
  databasePath: string;
  adminToken: BootstrapToken;
  syncToken: BootstrapToken;
  /** What `/metrics` (control and gateways) and a gateway's detailed `/health` require. */
  metricsToken: BootstrapToken;
}

/** A file in the data dir holds something else than what control keeps there; the message says how to recover. */
export class DataFileError extends CodedError {
  override readonly code = 'SVC_ERR_DATA_FILE';
}

/** SHA-256 of a token, as stored and as compared. */
export const tokenDigest = (token: string): Buffer => createHash('sha256').update(token).digest();

function readOrCreateToken(path: string, prefix: string): { token: string; created: boolean } {
  return readOrCreate(
    path,
    (token) => {
      if (token.length < 32) throw new DataFileError(`token file ${path} holds fewer than 32 characters; delete it to regenerate`);
    },
    () => prefix + encodeBase58(randomBytes(32)),
  );
}

/** This control's id from `<dataDir>/control-id`, made and written on first start. */
function readOrCreateControlId(dataDir: string): string {
  const path = join(dataDir, CONTROL_ID_FILE);
  return readOrCreate(
    path,
    (id) => {
      if (!CONTROL_ID_PATTERN.test(id)) throw new DataFileError(`${path} does not hold a control id (ctl_…); delete it to make a new one`);
    },
    () => newId('ctl'),
  ).token;
}

/** The file's value (checked, its mode tightened to 0600), or a new one written with 'wx'. */
function readOrCreate(path: string, check: (value: string) => void, make: () => string): { token: string; created: boolean } {
  try {
    const token = readFileSync(path, 'utf8').trim();
    check(token);
    const mode = statSync(path).mode & 0o777;
    if ((mode & 0o077) !== 0) chmodSync(path, 0o600);
    return { token, created: false };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const token = make();
  // 'wx' fails if another process created the file in between: then read theirs.
  let fd: number;
  try {
    fd = openSync(path, 'wx', 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return { token: readFileSync(path, 'utf8').trim(), created: false };
    throw err;
  }
  try {
    writeSync(fd, token + '\n');
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  return { token, created: true };
}

export function bootstrapDataDir(config: Readonly<Config>): BootstrapResult {
  const dataDir = resolve(config.dataDir);
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const token = (configured: string | undefined, file: string, prefix: string): BootstrapToken => {
    if (configured !== undefined) return { token: configured, file: null, created: false, digest: tokenDigest(configured) };
    const path = join(dataDir, file);
    const made = readOrCreateToken(path, prefix);
    return { ...made, file: path, digest: tokenDigest(made.token) };
  };
  return {
    dataDir,
    controlId: readOrCreateControlId(dataDir),
    databasePath: join(dataDir, DATABASE_FILE),
    adminToken: token(config.adminToken, ADMIN_TOKEN_FILE, 'svc_admin_'),
    syncToken: token(config.syncToken, SYNC_TOKEN_FILE, 'svc_sync_'),
    metricsToken: token(config.metricsToken, METRICS_TOKEN_FILE, 'svc_metrics_'),
  };
}
