/**
 * Errors inside svc's processes carry a stable `code` (`SVC_ERR_…`), one class per kind, the
 * way undici's errors do: logs print the code (the logger writes an error's `name`, `message`
 * and `code`), and callers in other modules branch on the code rather than on the class or the
 * message. These never reach an HTTP answer as they are: handlers turn the ones a caller may
 * cause into problem+json (`errors.ts`, `svc_…` codes); the rest are refusals at start or
 * failures of a command, told to the operator with their message.
 *
 * `INTERNAL_ERROR_CODES` is the catalogue; docs/design.md §9 lists it and a test keeps the two
 * equal. A code never changes once released; a new kind gets a new code.
 */

export const INTERNAL_ERROR_CODES = {
  SVC_ERR: 'the base of every error below',
  SVC_ERR_CONFIG: 'a setting is missing or invalid (config/load.ts `ConfigError`)',
  SVC_ERR_INSTANCE_LOCKED: 'another process holds the data dir’s single-instance lock (runtime/instance-lock.ts `InstanceLockedError`)',
  SVC_ERR_CONTROL_START: 'control refused to start; the message says what to fix (control/server.ts `ControlStartError`)',
  SVC_ERR_GATEWAY_START: 'the gateway refused to start; the message says what to fix (gateway/main.ts `GatewayStartError`)',
  SVC_ERR_TOKEN_CONFLICT:
    'a token of this control differs from the one the controls on the database share (control/tokens.ts `TokenConflictError`)',
  SVC_ERR_STORE_OPEN:
    'the store cannot be opened: a bad database URL, a schema newer than this build (control/store/errors.ts `StoreOpenError`)',
  SVC_ERR_STORE_COPY: '`svcctl store copy` refused or failed; the target is left as found (control/store/pg/copy.ts `StoreCopyError`)',
  SVC_ERR_SETTLEMENT_CONFLICT:
    'a settlement batch found the calls it planned settled or gone when it wrote them (another settler, past its lease): rolled back (control/store/errors.ts `SettlementConflictError`)',
  SVC_ERR_KEY_NOT_PREPARED:
    'a signing key rotation’s key is no longer the one prepared: another rotation replaced it; the current key signs on (control/store/errors.ts `KeyNotPreparedError`, with `kid`)',
  SVC_ERR_PG_CLUSTER_START:
    'a throwaway PostgreSQL cluster (tests, benches, `npm run cluster`) cannot start here, its initdb failed, or it did not accept connections in time (demo/throwaway-postgres.ts `ClusterStartError`)',
  SVC_ERR_PG_SERVER_EXITED:
    'a throwaway cluster’s server exited before accepting connections, its log kept as `log` (a lost port is retried) (demo/throwaway-postgres.ts `ServerExited`)',
  SVC_ERR_LEDGER: 'a ledger rule a request would break (control/store/ledger.ts `LedgerError`, with `reason`)',
  SVC_ERR_LP: 'a liquidity provider rule a request would break (control/store/lps.ts `LpError`, with `reason` and `field`)',
  SVC_ERR_MISSING_RECEIPT: 'a settled batch has no receipt where one must be (control/store/receipts.ts `MissingReceiptError`)',
  SVC_ERR_REISSUE: 'a receipt reissue refused (control/store/receipts.ts `ReissueError`, with `reason`)',
  SVC_ERR_SETTLER_HALTED:
    'the settler is halted on a settled batch without a receipt (control/settler/settler.ts `SettlerHaltedError`, with `halt`)',
  SVC_ERR_SYNC_POST_TIMEOUT:
    'the gateway’s ack, nack or lease renewal got no complete answer within the response timeout; its connection destroyed (gateway/control-link/sync-post.ts `SyncPostTimeoutError`)',
  SVC_ERR_SYNC_POST_QUEUE_FULL:
    'an ack, nack or lease renewal refused unsent: as many as the queue holds wait already (gateway/control-link/sync-post.ts `SyncPostQueueFullError`)',
  SVC_ERR_SYNC_POST_ANSWER:
    'control’s answer to an ack is not HTTP/1.1 the gateway reads, or the connection closed before it was whole (gateway/control-link/sync-post.ts `SyncPostAnswerError`)',
  SVC_ERR_SYNC_POST_CLOSED:
    'the gateway’s ack client was closed with the request on the wire or waiting (gateway/control-link/sync-post.ts `SyncPostClosedError`)',
  SVC_ERR_USAGE: 'svcctl: the command line or its values are wrong; exit 2 (cli/exit-codes.ts `UsageError`)',
  SVC_ERR_CLI: 'svcctl: the command failed with a one-line message; exit 1 (cli/exit-codes.ts `CliError`)',
  SVC_ERR_CLI_API: 'svcctl: control answered with a problem, kept as `problem` (cli/client.ts `ApiError`)',
  SVC_ERR_INVARIANT:
    'a rule the code itself keeps was broken: a bug, never bad input; the message names the rule (protocol/coded-error.ts `InvariantError`)',
  SVC_ERR_INSTANCE_LOCK:
    'the data dir’s single-instance lock cannot be taken: its socket path is too long, or the socket stays in use but nobody answers (runtime/instance-lock.ts `InstanceLockError`)',
  SVC_ERR_RESPONSE_SCHEMA: 'an endpoint’s response schema does not compile (protocol/response-schema.ts `ResponseSchemaError`)',
  SVC_ERR_DATA_FILE:
    'a file control keeps in its data dir (a token, the control id) holds something else; the message says how to recover (control/bootstrap.ts `DataFileError`)',
  SVC_ERR_SIGNING_KEY:
    'the receipt signing key file is not an Ed25519 private key in PEM (control/receipts/signing-key.ts `SigningKeyError`)',
  SVC_ERR_ALREADY_DONE:
    'an admin change found already made inside its mutation: rolled back, answered as done (control/admin/mutation.ts `AlreadyDone`)',
  SVC_ERR_SNAPSHOT_ABANDONED:
    'a snapshot build stopped because no gateway waits for it any more (control/sync/snapshot.ts `SnapshotAbandoned`)',
  SVC_ERR_UPDATE_REJECTED:
    'the gateway refuses a snapshot or delta (from control or its persisted file) and keeps what it held (gateway/state/state.ts `UpdateRejected`)',
  SVC_ERR_CONTROL_ANSWER:
    'control answered a gateway’s outcome batch or budget request with a status other than 200 (kept as `status`) or a body that is not the JSON expected (gateway/control-link/sync-http.ts `ControlAnswerError`)',
  SVC_ERR_CONTROL_TIMEOUT:
    'control did not answer a gateway’s request, or went silent on its sync stream, within the deadline (gateway/control-link/sync-http.ts `ControlTimeoutError`)',
  SVC_ERR_CONTROL_MOVED:
    'an outcome batch in flight was abandoned because the gateway moved to another control; it is sent there (gateway/journal/shipper.ts `ControlMovedError`)',
  SVC_ERR_STREAM_CLOSED:
    'a gateway’s sync stream closed before control’s write to it finished (control/sync/connection.ts `StreamClosedError`)',
  SVC_ERR_DEMO: '`npm run demo`: a step of the story did not hold (demo/index.ts `DemoFailure`)',
  SVC_ERR_DEMO_CLUSTER: '`npm run cluster`: a process of the cluster did not start or answer (demo/cluster.ts `ClusterFailure`)',
  SVC_ERR_CALL_CANCELLED:
    'the gateway ended a call to the provider itself (the caller left, a deadline passed): the reason undici is handed, never reported (gateway/proxy/undici.ts `CallCancelled`)',
} as const;

export type InternalErrorCode = keyof typeof INTERNAL_ERROR_CODES;

/** The base of svc's internal errors: `name` is the class's, `code` its stable code. */
export class CodedError extends Error {
  readonly code: InternalErrorCode = 'SVC_ERR';

  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}

/**
 * A rule the code itself keeps was broken (an assertion, an unreachable branch): a bug to
 * report, never the answer to bad input. Nobody branches on it; logs name it by its code.
 */
export class InvariantError extends CodedError {
  override readonly code = 'SVC_ERR_INVARIANT';
}

/** True when `err` is one of svc's internal errors with `code`: how other modules branch on a kind. */
export function hasCode<C extends InternalErrorCode>(err: unknown, code: C): err is CodedError & { readonly code: C } {
  return err instanceof CodedError && err.code === code;
}
