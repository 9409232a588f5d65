/** `svcctl serve control`: run the control role in this process until SIGINT/SIGTERM. */
import type { Config } from '../../../config/load';
import type { BootstrapToken } from '../../../control/bootstrap';
import { startControl } from '../../../control/server';
import type { Output } from '../../output';
import { EXIT_OK } from '../../exit-codes';
import { announceReady, startRole, untilSignal } from './lifecycle';

/** Where a token of the ready lines is: its file, the environment, or the control on the database that made it. */
export function tokenWhere(t: BootstrapToken, env: string): string {
  if (t.from !== undefined && t.token === null)
    return `shared: made by control ${t.from.control_id}, ${t.from.file === null ? 'configured there' : `written to ${t.from.file} on its host`}`;
  return t.file === null ? `from ${env}` : `${t.file}${t.created ? ' (created now, mode 0600)' : ''}`;
}

export async function run(opts: { config: Readonly<Config>; json?: boolean }, deps: { out: Output }): Promise<number> {
  const control = await startRole(() => startControl(opts.config), 'SVC_ERR_CONTROL_START', 'SVC_ERR_STORE_OPEN');
  const boot = control.bootstrap;
  const version = await control.ctx.store.version();
  announceReady(
    deps.out,
    'control',
    { control: control.urls.control, api: control.urls.api, indexer: control.urls.indexer },
    () => {
      deps.out.line(`svc control ready (state version ${version})`);
      deps.out.line(`  admin + sync   ${control.urls.control}`);
      deps.out.line(`  public api     ${control.urls.api}`);
      deps.out.line(`  indexer        ${control.urls.indexer}`);
      deps.out.line(`  data dir       ${boot.dataDir}`);
      deps.out.line(`  admin token    ${tokenWhere(boot.adminToken, 'SVC_ADMIN_TOKEN')}`);
      deps.out.line(`  sync token     ${tokenWhere(boot.syncToken, 'SVC_SYNC_TOKEN')}`);
      deps.out.line(`  metrics token  ${tokenWhere(boot.metricsToken, 'SVC_METRICS_TOKEN')}`);
    },
    opts.json,
    { admin_token: tokenWhere(boot.adminToken, 'SVC_ADMIN_TOKEN') },
  );
  await untilSignal();
  await control.close();
  return EXIT_OK;
}
