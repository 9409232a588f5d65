/**
 * Which control each gateway is attached to (`control_id`, NULL while detached) and the proxy
 * engine it announced at its last connect: SQLite's migration 15 (`../../migrations/015-gateway-attachment.ts`).
 */
export default `
  ALTER TABLE gateways ADD COLUMN control_id TEXT COLLATE "C";
  ALTER TABLE gateways ADD COLUMN engine TEXT COLLATE "C";
`;
