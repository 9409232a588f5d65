/**
 * Process lifecycle shared by the serve commands and `up`: a machine-readable ready line
 * for a supervising `svcctl up`, a human banner otherwise, and a clean stop on signals.
 */
import { hasCode, type InternalErrorCode } from '../../../protocol/coded-error';
import type { ReadyLine, ServeReady } from '../../../protocol/runtime';
import { CliError } from '../../exit-codes';
import type { Output } from '../../output';

/**
 * Start a role; a refusal the operator must act on (`refusals`, by code: a second control on a data dir, a store that cannot
 * be opened, a gateway id already running) exits 1 with its message, anything else stays unexpected.
 */
export async function startRole<T>(start: () => Promise<T>, ...refusals: InternalErrorCode[]): Promise<T> {
  try {
    return await start();
  } catch (err) {
    if (refusals.some((code) => hasCode(err, code))) throw new CliError((err as Error).message);
    throw err;
  }
}

/** Env var `svcctl up` sets on its children so they announce readiness as one JSON line. */
export const READY_ENV = 'SVC_SUPERVISED';
export const READY_PREFIX = 'svc-ready ';

/**
 * Say that `role` listens on `urls`: the ready line under `svcctl up`, one JSON object with
 * `--json` (`{"status":"ready","role","pid","urls"}`, for scripts), else the human banner.
 */
export function announceReady(
  out: Output,
  role: string,
  urls: Record<string, string>,
  banner: () => void,
  json = false,
  supervised: Pick<ReadyLine, 'admin_token'> = {},
): void {
  if (process.env[READY_ENV] === '1')
    out.line(READY_PREFIX + JSON.stringify({ role, pid: process.pid, urls, ...supervised } satisfies ReadyLine));
  else if (json) out.json({ status: 'ready', role, pid: process.pid, urls } satisfies ServeReady);
  else banner();
}

/**
 * Resolves on the first SIGINT or SIGTERM. Under `svcctl up` a child leaves SIGINT to its
 * parent (which stops the roles in order: gateway first, so it can ship its last outcomes)
 * and also stops when the parent goes away (its stdin pipe closes).
 */
export function untilSignal(): Promise<NodeJS.Signals | 'parent-exit'> {
  const supervised = process.env[READY_ENV] === '1';
  return new Promise((resolve) => {
    const done = (reason: NodeJS.Signals | 'parent-exit') => {
      process.off('SIGINT', onInt);
      process.off('SIGTERM', done);
      if (supervised) process.stdin.destroy();
      resolve(reason);
    };
    const onInt = () => {
      if (!supervised) done('SIGINT');
    };
    process.on('SIGINT', onInt);
    process.on('SIGTERM', done);
    if (supervised) {
      process.stdin.on('end', () => done('parent-exit'));
      process.stdin.on('error', () => done('parent-exit'));
      process.stdin.resume();
    }
  });
}
