/** `svcctl serve gateway [--control URL]…`: run one gateway in this process until SIGINT/SIGTERM. */
import type { Config } from '../../../config/load';
import { startGateway } from '../../../gateway/main';
import { EXIT_OK } from '../../exit-codes';
import type { Output } from '../../output';
import { announceReady, startRole, untilSignal } from './lifecycle';

export async function run(opts: { config: Readonly<Config>; json?: boolean }, deps: { out: Output }): Promise<number> {
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
