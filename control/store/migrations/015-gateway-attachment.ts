/**
 * 15: which control each gateway is attached to, and the proxy engine it announced.
 *
 * - `gateways.control_id`: the id of the control serving the gateway's sync stream now (set
 *   when it connects, cleared when that stream closes); NULL while it is detached. On a shared
 *   PostgreSQL database every control reads it to count the gateways the others serve (limit
 *   shares, cluster-wide `--wait`) and `svcctl status` shows it.
 * - `gateways.engine`: the proxy engine the gateway announced at its last connect (NULL when it
 *   announced none), so any control can show it.
 */
export default `
  ALTER TABLE gateways ADD COLUMN control_id TEXT;
  ALTER TABLE gateways ADD COLUMN engine TEXT;
`;
