/**
 * The gateways attached to the other controls of a shared database (`store.cluster`), as the
 * sync hub counts them: in the division of the key limits, and in a `--wait`. Their rows are
 * re-read whenever another control announces an ack batch or a gateway attaching or detaching
 * (`ClusterTable.onGateways`), and whenever the hub asks (every lease check, every wait); one
 * read at a time, one asked for meanwhile running after it. On a store of one control there are
 * none, and nothing is read.
 */
import type { Logger } from '../../runtime/log';
import type { GatewayRow } from '../store/gateways';
import type { Store } from '../store/index';

export interface OtherControlsOptions {
  store: Store;
  /** This control's id: the rows attached to it are the hub's own. */
  controlId: string;
  leaseMs: number;
  log: Logger;
  /** Whether the hub serves gateway `id` itself now (then it is not another control's). */
  isLocal: (id: string) => boolean;
  /** Told after every read: every gateway's row (weights included). */
  read: (rows: readonly GatewayRow[]) => void;
}

export class OtherControlsGateways {
  private rows = new Map<string, GatewayRow>();
  private reading = false;
  private readAgain = false;
  private closed = false;
  private readonly unsubscribe: () => void;

  constructor(private readonly opts: OtherControlsOptions) {
    this.unsubscribe =
      opts.store.cluster?.onGateways((event) => {
        if (event.from !== opts.controlId) this.refresh();
      }) ?? (() => undefined);
  }

  /** Whether there may be other controls (the store is shared). */
  get shared(): boolean {
    return this.opts.store.cluster !== null;
  }

  /** Keep, of `rows` (every gateway, just read), those attached to another control. */
  load(rows: readonly GatewayRow[]): void {
    if (!this.shared) return;
    const out = new Map<string, GatewayRow>();
    for (const row of rows) if (row.control_id !== null && row.control_id !== this.opts.controlId) out.set(row.id, row);
    this.rows = out;
  }

  /** Whether `id` was attached to another control at the last read. */
  has(id: string): boolean {
    return this.rows.has(id);
  }

  /** A gateway that connected here is no longer another control's. */
  forget(id: string): void {
    this.rows.delete(id);
  }

  /**
   * The gateways attached to other controls whose lease holds (seen within the lease, by the
   * clock of the control that saw them), and not attached here meanwhile.
   */
  live(now: number): GatewayRow[] {
    const out: GatewayRow[] = [];
    for (const row of this.rows.values()) if (!this.opts.isLocal(row.id) && now - row.last_seen <= this.opts.leaseMs) out.push(row);
    return out;
  }

  /** Read the rows again (`read` is told after); a failed read is logged, and the next one reads again. */
  refresh(): void {
    if (!this.shared || this.closed) return;
    if (this.reading) {
      this.readAgain = true;
      return;
    }
    this.reading = true;
    void (async () => {
      try {
        do {
          this.readAgain = false;
          const rows = await this.opts.store.gateways.list();
          if (this.closed) return;
          this.load(rows);
          this.opts.read(rows);
        } while (this.readAgain);
      } catch (err) {
        this.opts.log.warn('sync hub could not read the gateways of the other controls', { err });
      } finally {
        this.reading = false;
      }
    })();
  }

  close(): void {
    this.closed = true;
    this.unsubscribe();
  }
}
