/**
 * The operator token's format (protocol/operators.ts), apart from the wire shapes so the log's
 * redaction (`keys.ts`) can know it without loading them.
 *
 * A token is `svc_op_` followed by the base58 form of 32 CSPRNG bytes, like a beta key. Only
 * `sha256(token)` is ever stored; the plaintext exists once, in the answer to `operators add`
 * or `operators rotate`.
 */
import { createHash, randomBytes } from 'node:crypto';
import { BASE58_ALPHABET, encodeBase58 } from './base58';

export const OPERATOR_TOKEN_PREFIX = 'svc_op_';
/** Random bytes behind each token. 32 bytes = 256 bits. */
export const OPERATOR_TOKEN_RANDOM_BYTES = 32;
/** Characters of the token body kept in the display stub. */
const STUB_CHARS = 4;

/** Anything that looks like an operator token, anywhere in a text (for log redaction). */
export const OPERATOR_TOKEN_LIKE_PATTERN = new RegExp(`${OPERATOR_TOKEN_PREFIX}[${BASE58_ALPHABET}]{8,}`, 'g');

export function generateOperatorToken(): string {
  return OPERATOR_TOKEN_PREFIX + encodeBase58(randomBytes(OPERATOR_TOKEN_RANDOM_BYTES));
}

/** Whether a bearer value is meant as an operator token (its prefix); says nothing about whether it is one. */
export const isOperatorTokenShaped = (value: string): boolean => value.startsWith(OPERATOR_TOKEN_PREFIX);

/** Hex SHA-256 of the whole token, prefix included: the only form that is stored. */
export function hashOperatorToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/** `svc_op_AbCd`: enough to recognise a token in a log line, useless to an attacker. */
export function operatorTokenStub(token: string): string {
  return token.slice(0, OPERATOR_TOKEN_PREFIX.length + STUB_CHARS);
}
