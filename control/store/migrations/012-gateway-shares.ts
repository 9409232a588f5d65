/**
 * 12: limits that hold across gateways (`limits.mode` = `split`).
 *
 * - `gateways.weight`: the operator's weight for the split (`svcctl gateways weight ID N`);
 *   shares are proportional to the weights of the live gateways. 1 for every gateway known.
 * - `gateways.share`: the share of every key's limit control last pushed to the gateway (a
 *   fraction in (0, 1]); NULL until it got one. A gateway cut off from control keeps enforcing
 *   it, so control shows it, and after a restart counts gateways seen within `sync.leaseS`
 *   with a share as still holding it until they reconnect or their lease lapses.
 */
export default `
  ALTER TABLE gateways ADD COLUMN weight REAL NOT NULL DEFAULT 1 CHECK (weight > 0);
  ALTER TABLE gateways ADD COLUMN share REAL CHECK (share > 0 AND share <= 1);
`;
