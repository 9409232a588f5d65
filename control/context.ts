/** What every control listener and handler is given: the store, settings, clock and log. */
import type { Config } from '../config/load';
import type { GatewayStatus } from '../protocol/gateways';
import type { Logger } from '../protocol/log';
import type { SettlerStatus } from '../protocol/settlement';
import type { Store } from './store';

export interface ControlContext {
  store: Store;
  config: Readonly<Config>;
  log: Logger;
  /** Wall clock in ms; injected so tests can move time. */
  now: () => number;
  /** Public URLs of this control's listeners (filled in once they are bound). */
  urls: { control: string; api: string; indexer: string };
  startedAt: number;
  dataDir: string;
  /** This control's id (`ctl_…`, kept in the data dir's `control-id`). */
  controlId: string;
  /** Every gateway known to control, with whether it is connected now. */
  gateways: () => Promise<GatewayStatus[]>;
  /** The settler's state; null while no settler runs in this process. */
  settler: () => Promise<SettlerStatus> | null;
}
