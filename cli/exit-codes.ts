/** Documented exit codes of `svcctl` (docs/design.md §10). */
import { CodedError } from '../protocol/coded-error';

export const EXIT_OK = 0;
/** The command ran and failed: control unreachable, conflict, not found, server error. */
export const EXIT_FAILURE = 1;
/** The command line or its values are wrong; fix the invocation. */
export const EXIT_USAGE = 2;
/**
 * Control answered, but cannot reach its database (503 `svc_store_unavailable`): nothing is
 * wrong with the command; run it again once the database is back.
 */
export const EXIT_STORE_UNAVAILABLE = 3;

/** Thrown for bad arguments or option values; exits 2 with the message. */
export class UsageError extends CodedError {
  override readonly code = 'SVC_ERR_USAGE';
  constructor(message: string) {
    super(message);
  }
}

/** Thrown for a failure that has a clear, actionable one-line message; exits 1. */
export class CliError extends CodedError {
  override readonly code: 'SVC_ERR_CLI' | 'SVC_ERR_CLI_API' = 'SVC_ERR_CLI';
  readonly exitCode: number;
  constructor(message: string, exitCode = EXIT_FAILURE) {
    super(message);
    this.exitCode = exitCode;
  }
}
