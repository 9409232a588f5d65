/**
 * The rate limits in force from the settings: what the gateways enforce (sent in every snapshot)
 * and what the public account answer shows an agent for its key.
 */
import type { Config } from '../config/load';
import type { Limits } from '../protocol/snapshot';

export function limitsFromConfig(config: Readonly<Config>): Limits {
  const l = config.limits;
  return {
    key: { count: l.keyCount, window_seconds: l.keyWindowS, burst: l.keyBurst },
    ip: { count: l.ipCount, window_seconds: l.ipWindowS, burst: l.ipBurst },
  };
}
