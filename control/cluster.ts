/**
 * The controls sharing one database, as this control takes part and as the status answers
 * show them. On PostgreSQL each control registers in the store's `controls` table once it
 * listens (its id and admin URL) and says it is alive every `CONTROL_HEARTBEAT_MS`; it leaves
 * the table when it stops, and a control not seen for `CONTROL_FORGET_MS` (it died) is
 * forgotten by the next heartbeat of any other. On SQLite the one control is the whole list.
 */
import type { ControlView } from '../protocol/admin';
import type { ControlContext } from './context';

/** How often a control says it is alive. @default 3000 */
export const CONTROL_HEARTBEAT_MS = 3_000;
/** A control not seen for this long is taken off the list. @default 3_600_000 (an hour) */
export const CONTROL_FORGET_MS = 3_600_000;

/** This control in the registry: joined (first heartbeat) at once, left by `leave()`. */
export interface Membership {
  leave(): Promise<void>;
}

/** Register this control (PostgreSQL) and keep saying it is alive; on SQLite, nothing to do. */
export async function joinCluster(ctx: ControlContext, heartbeatMs = CONTROL_HEARTBEAT_MS): Promise<Membership> {
  const cluster = ctx.store.cluster;
  if (cluster === null) return { leave: () => Promise.resolve() };
  let lastError: string | null = null;
  const beat = async (): Promise<void> => {
    try {
      await cluster.heartbeat(ctx.controlId, ctx.urls.control, ctx.startedAt, CONTROL_FORGET_MS);
      lastError = null;
    } catch (err) {
      const message = (err as Error).message ?? String(err);
      if (message !== lastError) ctx.log.warn('control heartbeat failed', { err });
      lastError = message;
    }
  };
  await cluster.heartbeat(ctx.controlId, ctx.urls.control, ctx.startedAt, CONTROL_FORGET_MS);
  let beating: Promise<void> = Promise.resolve();
  const timer = setInterval(() => {
    beating = beat();
  }, heartbeatMs);
  timer.unref();
  return {
    leave: async () => {
      clearInterval(timer);
      await beating;
      await cluster.leave(ctx.controlId).catch(() => undefined);
    },
  };
}

/** Every control on the database, oldest start first; on SQLite, this one (always the leader). */
export async function controlsView(ctx: ControlContext): Promise<ControlView[]> {
  const cluster = ctx.store.cluster;
  if (cluster === null) return [{ id: ctx.controlId, url: ctx.urls.control, leader: true, last_seen: new Date(ctx.now()).toISOString() }];
  return (await cluster.list()).map((c) => ({ id: c.id, url: c.url, leader: c.leader, last_seen: new Date(c.last_seen).toISOString() }));
}
