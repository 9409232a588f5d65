/**
 * svc-monitor-sdk: the client for the svc API reliability gateway.
 *
 * @see ../README.md
 */
export { SvcClient } from './client';
export type { SvcClientOptions, CallOptions, CallResult, ReadOptions, ActivityOptions, VerifyRefundOptions } from './client';
export type { AccountOptions, AccountCallsOptions } from './account';
export { FileCheckpointStore, MemoryCheckpointStore, HistoryRewrittenError } from './checkpoints';
export type { CheckpointStore } from './checkpoints';
export {
  verifyCallProof,
  ChainVerifier,
  ReceiptKeyring,
  leafCanonical,
  receiptHash,
  jwkThumbprint,
  GENESIS_PREV,
  checkpointShapeProblem,
} from './generated/receipts-verify';
export { verifyConsistency as verifyReceiptConsistency, CONSISTENCY_MAX_RECEIPTS } from './generated/receipts-consistency';
export type { RefundVerdict, ChainProblem } from './generated/receipts-verify';
export type { ConsistencyFailure, ConsistencyOptions, ConsistencyVerdict } from './generated/receipts-consistency';
export { SvcError, isSvcError } from './errors';
export type { Problem } from './errors';
export type { FetchLike, HeadersLike } from './http';
export type { SvcFields } from './headers';
export type { Coverage } from './generated/call-headers';
export { isCallId } from './headers';
export { DEFAULT_CALL_TIMEOUT_MS, DEFAULT_READ_TIMEOUT_MS, DEFAULT_MAX_RESPONSE_BYTES } from './limits';
export type { Clock } from './clock';
export {
  parseRetryAfter,
  parseRateLimitReset,
  DEFAULT_RETRY_MAX,
  DEFAULT_RETRY_JITTER,
  DEFAULT_RETRY_BASE_DELAY_MS,
  DEFAULT_RETRY_MAX_DELAY_MS,
} from './retry';
export type { RetryOptions } from './retry';
export { USER_AGENT, SDK_VERSION } from './version';
export * from './generated/errors';
export * from './codes';
export { OUTCOMES } from './generated/call-headers';
export type * from './generated/wire';
