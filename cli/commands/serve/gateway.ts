/**
 * `svcctl serve gateway [--control URL]… [--workers N|auto]`: run one gateway in this process
 * until SIGINT/SIGTERM; with several workers, this process supervises them (`gateway/workers/`)
 * and each worker runs this command again as `<id>.<n>`.
 */
import type { Config } from '../../../config/load';
import { startGateway } from '../../../gateway/main';
import { runSupervisor } from '../../../gateway/workers/index';
import { runWorker, workerIndex } from '../../../gateway/workers/worker';
import { EXIT_OK } from '../../exit-codes';
import type { Output } from '../../output';
import { announceReady, startRole, untilSignal } from './lifecycle';

export async function run(opts: { config: Readonly<Config>; json?: boolean }, deps: { out: Output }): Promise<number> {
  const index = workerIndex();
  if (index !== null) {
    await startRole(() => runWorker(opts.config, index, startGateway), 'SVC_ERR_GATEWAY_START');
    return EXIT_OK;
  }
  if (opts.config.gateway.workers > 1) return runWorkers(opts, deps);
  const gateway = await startRole(() => startGateway(opts.config), 'SVC_ERR_GATEWAY_START');
  announceReady(
    deps.out,
    'gateway',
    { gateway: gateway.url },
    () => {
      deps.out.line(`svc gateway ${gateway.id} listening`);
      deps.out.line(`  gateway ({market_url})  ${gateway.url}`);
      deps.out.line(`  control                 ${gateway.controlUrl}`);
      if (gateway.controlUrls.length > 1) deps.out.line(`  controls (in order)     ${gateway.controlUrls.join(' ')}`);
      deps.out.line(`  engine                  ${gateway.engine}`);
      deps.out.line(
        `  state                   ${gateway.state() ? `version ${gateway.state()!.version} (last-known-good)` : 'waiting for control'}`,
      );
    },
    opts.json,
  );
  await untilSignal();
  await gateway.close();
  return EXIT_OK;
}

/** `gateway.workers` > 1: supervise the workers; ready once every one listens, stopped with them all. */
async function runWorkers(opts: { config: Readonly<Config>; json?: boolean }, deps: { out: Output }): Promise<number> {
  const gateway = await startRole(() => runSupervisor(opts.config), 'SVC_ERR_GATEWAY_START');
  announceReady(
    deps.out,
    'gateway',
    { gateway: gateway.url },
    () => {
      deps.out.line(`svc gateway ${gateway.id} listening, ${gateway.workers.length} workers`);
      deps.out.line(`  gateway ({market_url})  ${gateway.url}`);
      deps.out.line(`  workers                 ${gateway.workers.join(' ')}`);
      deps.out.line(`  engine                  ${opts.config.gateway.engine}`);
    },
    opts.json,
  );
  await untilSignal();
  await gateway.close();
  return EXIT_OK;
}
