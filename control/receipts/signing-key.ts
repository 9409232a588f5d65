/**
 * The receipt signing key (docs/design.md §11): an Ed25519 key made with node:crypto, kept as a
 * PKCS#8 PEM file in the data dir (`receipt-signing.key`, mode 0600) and nowhere else. It is
 * created on first start, like the admin and sync tokens (`control/bootstrap.ts`), and
 * replaced by `svcctl receipts rotate-key`: the new key is written to a temp file, synced
 * and renamed over the old one, so the file always holds one whole key. The public half of
 * every key is published (the store's `receipt_keys`); the private half never leaves this
 * module: not in answers, logs, errors or the database.
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { chmodSync, closeSync, fsyncSync, openSync, readFileSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { CodedError } from '../../protocol/coded-error';
import { jwkThumbprint } from '../../protocol/receipts-verify';

/** File in the data dir holding the current private key. */
export const RECEIPT_KEY_FILE = 'receipt-signing.key';

/** The signing key file (or a key given) is not an Ed25519 private key; the message says how to recover. */
export class SigningKeyError extends CodedError {
  override readonly code = 'SVC_ERR_SIGNING_KEY';
}

/** Signs receipts with the current key. Holds the private key where nothing can print it. */
export class ReceiptSigner {
  readonly #key: KeyObject;
  /** RFC 7638 thumbprint of the public key. */
  readonly kid: string;
  /** The public key, base64url (the JWK's `x`). */
  readonly x: string;

  constructor(privateKey: KeyObject) {
    if (privateKey.asymmetricKeyType !== 'ed25519') throw new SigningKeyError('the receipt signing key is not an Ed25519 key');
    this.#key = privateKey;
    const jwk = createPublicKey(privateKey).export({ format: 'jwk' });
    if (typeof jwk.x !== 'string') throw new SigningKeyError('the receipt signing key has no public half');
    this.x = jwk.x;
    this.kid = jwkThumbprint(jwk.x);
  }

  /** Ed25519 signature of `data`, base64url. */
  sign(data: Buffer): string {
    return sign(null, data, this.#key).toString('base64url');
  }

  /** A fresh key. */
  static generate(): ReceiptSigner {
    return new ReceiptSigner(generateKeyPairSync('ed25519').privateKey);
  }

  toJSON(): { kid: string } {
    return { kid: this.kid };
  }
}

function fsyncDir(dir: string): void {
  try {
    const fd = openSync(dir, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch {
    // Not every platform can fsync a directory; the rename is still atomic.
  }
}

/** Write `key` to `path` whole: temp file (0600, synced), rename, directory sync. */
function writeKeyFile(path: string, key: KeyObject): void {
  const pem = key.export({ format: 'pem', type: 'pkcs8' }) as string;
  const tmp = `${path}.${process.pid}.tmp`;
  rmSync(tmp, { force: true });
  const fd = openSync(tmp, 'wx', 0o600);
  try {
    writeSync(fd, pem);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
  fsyncDir(join(path, '..'));
}

/**
 * The signer kept in `dataDir`, created when the file does not exist yet. A file that is not
 * an Ed25519 private key stops start-up (its content is never echoed). Loose modes are
 * tightened to 0600.
 */
export function loadOrCreateSigner(dataDir: string): { signer: ReceiptSigner; created: boolean; file: string } {
  const file = join(dataDir, RECEIPT_KEY_FILE);
  let pem: string | null = null;
  try {
    pem = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  if (pem === null) {
    writeKeyFile(file, generateKeyPairSync('ed25519').privateKey);
    // Read back what the file holds, so the signer is always the file's key.
    return { ...loadOrCreateSigner(dataDir), created: true };
  }
  if ((statSync(file).mode & 0o077) !== 0) chmodSync(file, 0o600);
  let key: KeyObject;
  try {
    key = createPrivateKey(pem);
  } catch {
    throw new SigningKeyError(
      `${file} does not hold a PEM private key; restore it from a backup, or move it away to start a new signing key`,
    );
  }
  if (key.asymmetricKeyType !== 'ed25519') throw new SigningKeyError(`${file} holds a ${String(key.asymmetricKeyType)} key, not Ed25519`);
  return { signer: new ReceiptSigner(key), created: false, file };
}

/** Replace the key in `dataDir` with a new one and return its signer. The old private key is gone afterwards. */
export function rotateSigner(dataDir: string): ReceiptSigner {
  const { privateKey } = generateKeyPairSync('ed25519');
  writeKeyFile(join(dataDir, RECEIPT_KEY_FILE), privateKey);
  return new ReceiptSigner(privateKey);
}
