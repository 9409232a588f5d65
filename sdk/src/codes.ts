/**
 * Every code an `SvcError` can carry, in one catalogue: the service's codes (generated from
 * svc's `protocol/errors.ts`, sent in problem+json answers) and the SDK's own client-side codes
 * (`svc_sdk_…`, raised by this package when no answer of svc's explains the failure: a bad
 * option, a network failure, a timeout, an answer too large or malformed). The service never
 * sends an `svc_sdk_…` code (the generator refuses one in its catalogue), so the two sets cannot
 * collide.
 *
 * `ERROR_CATALOGUE[err.code]` type-checks for any `SvcError` (its `code` may also be a service
 * code newer than this SDK version, for which the entry is `undefined`).
 */
import { SERVICE_ERROR_CATALOGUE, SERVICE_ERROR_CODES, type ServiceErrorCode } from './generated/errors';

/** A configuration mistake: a bad option or argument (URL, key, timeout, endpoint id…), or a URL the method needs that is not set. */
export const SVC_SDK_CONFIG = 'svc_sdk_config';
/** The network failed (connection refused or lost, host not found); `cause` has the system error. */
export const SVC_SDK_NETWORK = 'svc_sdk_network';
/** The request's deadline (`timeoutMs`, retries and body included) passed. */
export const SVC_SDK_TIMEOUT = 'svc_sdk_timeout';
/** The answer's body, decoded, is larger than `maxResponseBytes`; the connection was closed. */
export const SVC_SDK_RESPONSE_TOO_LARGE = 'svc_sdk_response_too_large';
/** The answer is not what svc sends: an `X-Svc-*` header outside its format, a body that is not the JSON it should be. */
export const SVC_SDK_BAD_RESPONSE = 'svc_sdk_bad_response';
/**
 * The indexer serves a receipt history that does not extend the last checkpoint this client
 * verified (a batch at or before it was rewritten, or the history was cut). Raised by
 * `verifyConsistency` and by `verifyRefund` with a `checkpointStore`.
 */
export const SVC_SDK_HISTORY_REWRITTEN = 'svc_sdk_history_rewritten';

/** The SDK's own codes: failures no answer of svc's explains. */
export const SDK_ERROR_CODES = [
  SVC_SDK_CONFIG,
  SVC_SDK_NETWORK,
  SVC_SDK_TIMEOUT,
  SVC_SDK_RESPONSE_TOO_LARGE,
  SVC_SDK_BAD_RESPONSE,
  SVC_SDK_HISTORY_REWRITTEN,
] as const;
export type SdkErrorCode = (typeof SDK_ERROR_CODES)[number];

/**
 * Status 0 in the catalogue: raised by the SDK, not an HTTP answer of svc's (`err.status` is
 * the status of the answer that caused it when there was one, else 0).
 */
export const SDK_ERROR_CATALOGUE: { readonly [C in SdkErrorCode]: { readonly status: 0; readonly title: string } } = {
  svc_sdk_config: { status: 0, title: 'Bad SDK configuration' },
  svc_sdk_network: { status: 0, title: 'Network failure' },
  svc_sdk_timeout: { status: 0, title: 'Timed out' },
  svc_sdk_response_too_large: { status: 0, title: 'Response too large' },
  svc_sdk_bad_response: { status: 0, title: 'Bad response' },
  svc_sdk_history_rewritten: { status: 0, title: 'Receipt history rewritten' },
};

export type { ServiceErrorCode } from './generated/errors';

/** Every code this SDK version knows: the service's, then the SDK's own. */
export const ERROR_CODES = [...SERVICE_ERROR_CODES, ...SDK_ERROR_CODES] as const;
export type ErrorCode = ServiceErrorCode | SdkErrorCode;

export interface ErrorInfo {
  /** The HTTP status the service sends with the code; 0 for the SDK's own codes. */
  readonly status: number;
  readonly title: string;
}

/**
 * Status and title of every code. Indexable with any string (an `SvcError`'s `code` can be a
 * service code newer than this SDK: `undefined` then).
 */
export const ERROR_CATALOGUE: { readonly [C in ErrorCode]: ErrorInfo } & { readonly [code: string]: ErrorInfo | undefined } = {
  ...SERVICE_ERROR_CATALOGUE,
  ...SDK_ERROR_CATALOGUE,
};
