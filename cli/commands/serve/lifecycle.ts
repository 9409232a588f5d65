/**
 * Process lifecycle shared by the serve commands and `up`: a machine-readable ready line
 * for a supervising `svcctl up`, a human banner otherwise, and a clean stop on signals.
 */
import type { Output } from '../../output';

/** Env var `svcctl up` sets on its children so they announce readiness as one JSON line. */
export const READY_ENV = 'SVC_SUPERVISED';
export const READY_PREFIX = 'svc-ready ';

export function announceReady(out: Output, role: string, urls: Record<string, string>, banner: () => void): void {
  if (process.env[READY_ENV] === '1') out.line(READY_PREFIX + JSON.stringify({ role, pid: process.pid, urls }));
  else banner();
}

/** Resolves on the first SIGINT or SIGTERM. */
export function untilSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const done = (signal: NodeJS.Signals) => {
      process.off('SIGINT', done);
      process.off('SIGTERM', done);
      resolve(signal);
    };
    process.on('SIGINT', done);
    process.on('SIGTERM', done);
  });
}
