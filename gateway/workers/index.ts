/**
 * A gateway run as several workers (`gateway.workers` > 1), from the supervising process: start
 * them, and stop them. `worker.ts` is the other side, in each worker.
 */
import { GatewayStartError } from '../main';
import type { Config } from '../../config/load';
import { createLogger } from '../../runtime/log';
import { GatewaySupervisor } from './supervisor';
import { gatewayBaseId } from './worker';

export interface SupervisedGateway {
  /** The gateway's id (its workers are `<id>.<n>`). */
  id: string;
  url: string;
  /** The workers' ids, in index order. */
  workers: string[];
  close(): Promise<void>;
}

/** Fork the workers and resolve once every one listens; a worker that exits first fails the start (`SVC_ERR_GATEWAY_START`). */
export async function runSupervisor(config: Readonly<Config>): Promise<SupervisedGateway> {
  const id = gatewayBaseId(config);
  const log = createLogger({ level: config.logLevel, base: { role: 'gateway', gateway_id: id } });
  const supervisor = new GatewaySupervisor({ id, workers: config.gateway.workers, log });
  let url: string;
  try {
    url = await supervisor.start();
  } catch (err) {
    throw new GatewayStartError((err as Error).message);
  }
  log.info('gateway listening', { url, workers: supervisor.ids, pids: supervisor.pids });
  return { id, url, workers: supervisor.ids, close: () => supervisor.close() };
}
