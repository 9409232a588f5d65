/**
 * The runtime flags' names, apart from the wire shapes (no zod) so svcctl's command table can
 * name them in its help without loading them (`admin.ts` re-exports them).
 */
export const FLAG_NAMES = ['beta_gate_enabled', 'maintenance_mode'] as const;

/** The spec's prefix for the beta gate's name (`system_flags.beta_gate_enabled`), accepted too. */
export const FLAG_PREFIX = 'system_flags.';
