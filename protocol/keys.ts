/**
 * API key format (docs/design.md §5), shared by control (issue, hash) and gateway (check).
 *
 * A key is `svc_beta_` followed by the base58 form of 32 CSPRNG bytes (43–44 characters).
 * Only `sha256(key)` is ever stored or pushed; the plaintext exists once, in the answer
 * to `issue` or `rotate`.
 */
import { createHash, randomBytes } from 'node:crypto';
import { BASE58_ALPHABET, encodeBase58 } from './base58';
import { OPERATOR_TOKEN_LIKE_PATTERN, operatorTokenStub } from './operator-token';

export const KEY_PREFIX = 'svc_beta_';
/** Random bytes behind each key. 32 bytes = 256 bits. */
export const KEY_RANDOM_BYTES = 32;
/** Shortest accepted body after the prefix (base58 of 32 bytes is 43 or 44 characters). */
export const KEY_MIN_BODY_LENGTH = 32;
export const KEY_MAX_BODY_LENGTH = 64;
/** Characters of the key body kept in the display stub. */
export const KEY_STUB_CHARS = 4;

const KEY_PATTERN = new RegExp(`^${KEY_PREFIX}[${BASE58_ALPHABET}]{${KEY_MIN_BODY_LENGTH},${KEY_MAX_BODY_LENGTH}}$`);

/** Anything that looks like one of our keys, anywhere in a text (for log redaction). */
export const KEY_LIKE_PATTERN = new RegExp(`${KEY_PREFIX}[${BASE58_ALPHABET}]{8,}`, 'g');

export function generateKey(): string {
  let body = encodeBase58(randomBytes(KEY_RANDOM_BYTES));
  // A leading zero byte shortens the encoding; 32 bytes always give ≥ 32 characters.
  while (body.length < KEY_MIN_BODY_LENGTH) body = '1' + body;
  return KEY_PREFIX + body;
}

export function isWellFormedKey(value: string): boolean {
  return KEY_PATTERN.test(value);
}

/** Hex SHA-256 of the whole key, prefix included: the only form that is stored. */
export function hashKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

/** `svc_beta_AbCd`: enough to recognise a key in a list, useless to an attacker. */
export function keyStub(key: string): string {
  return key.slice(0, KEY_PREFIX.length + KEY_STUB_CHARS);
}

/** Replace anything key-shaped (a beta key or an operator token) in `text` with its stub and an ellipsis. */
export function redactKeys(text: string): string {
  return text
    .replace(KEY_LIKE_PATTERN, (match) => keyStub(match) + '…')
    .replace(OPERATOR_TOKEN_LIKE_PATTERN, (match) => operatorTokenStub(match) + '…');
}

/** Generate an opaque identifier such as `key_4Zx9…` (base58, 12 characters). */
export function newId(prefix: string): string {
  return `${prefix}_${encodeBase58(randomBytes(9)).padStart(12, '1').slice(0, 12)}`;
}
