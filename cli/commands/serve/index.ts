/**
 * The commands that run processes: `svcctl serve control`, `svcctl serve gateway` (one role in
 * this process) and `svcctl up` (control and a gateway as two child processes).
 */
import type { Config } from '../../../config/load';
import { GATEWAY_ENGINES } from '../../../protocol/engines';
import { OPERATOR_TOKEN_PREFIX, isOperatorTokenShaped } from '../../../protocol/operator-token';
import { UsageError } from '../../exit-codes';
import { lazy, type GroupSpec, type OptionSpec, type ProcessSpec } from '../../register';

/**
 * On control, `SVC_ADMIN_TOKEN` (the `adminToken` setting) is root's token. An operator's token
 * there is refused (exit 2): an operator's environment, set up to run svcctl, must never become
 * root's token, with every scope, when the same shell starts control.
 */
export function refuseOperatorRootToken(config: Readonly<Config>): Readonly<Config> {
  if (config.adminToken !== undefined && isOperatorTokenShaped(config.adminToken)) {
    throw new UsageError(
      `SVC_ADMIN_TOKEN (adminToken) holds an operator's token (${OPERATOR_TOKEN_PREFIX}…), but on control it sets root's token; unset it to use the data dir's admin.token (operators pass theirs to svcctl commands with --token-file)`,
    );
  }
  return config;
}

const PORT_OPTIONS: readonly OptionSpec[] = [
  { flags: '--host <host>', description: 'bind address (SVC_HOST)' },
  { flags: '--control-port <port>', description: 'admin + sync port (SVC_CONTROL_PORT)' },
  { flags: '--api-port <port>', description: 'public read API port (SVC_API_PORT)' },
  { flags: '--indexer-port <port>', description: 'indexer port (SVC_INDEXER_PORT)' },
  { flags: '--gateway-port <port>', description: 'gateway port (SVC_GATEWAY_PORT)' },
];

/** Control's store (`databaseUrl`), for the commands that start control. */
const DATABASE_URL_OPTION: OptionSpec = {
  flags: '--database-url <url>',
  description: "control's store: a postgres:// or postgresql:// URL (SVC_DATABASE_URL; default SQLite in the data dir)",
};

/** `gateway.workers`, for the commands that start a gateway. */
const WORKERS_OPTION: OptionSpec = {
  flags: '--workers <n>',
  description:
    'gateway processes serving the one port, a count or auto (the CPUs available); each is the gateway <id>.<n> to control (SVC_GATEWAY_WORKERS; default 1)',
};

/** The settings `PORT_OPTIONS` set, as dotted keys. */
const portSettings = (o: Record<string, unknown>) => ({
  host: o.host,
  'control.port': o.controlPort,
  'api.port': o.apiPort,
  'indexer.port': o.indexerPort,
  'gateway.port': o.gatewayPort,
});

export const serve: GroupSpec = {
  name: 'serve',
  description: 'run one role in this process',
  commands: [
    {
      name: 'control',
      description: 'run control: admin + sync, public API, indexer, settler',
      options: [
        ...PORT_OPTIONS,
        DATABASE_URL_OPTION,
        { flags: '--json', description: "once ready, print one JSON object with the listeners' URLs" },
      ],
      action: async (o, ctx) => {
        const config = refuseOperatorRootToken(ctx.settings({ ...portSettings(o), databaseUrl: o.databaseUrl }));
        const { run } = lazy<typeof import('./control.js')>(__dirname, 'control');
        return run({ config, json: o.json === true }, { out: ctx.out() });
      },
    },
    {
      name: 'gateway',
      description: 'run a gateway that takes its configuration from control',
      options: [
        { flags: '--host <host>', description: 'bind address (SVC_HOST)' },
        { flags: '--gateway-port <port>', description: 'port (SVC_GATEWAY_PORT)' },
        { flags: '--id <id>', description: 'gateway id, unique per control (SVC_GATEWAY_ID; default gw-<hostname>)' },
        {
          flags: '--engine <engine>',
          description: `proxy engine: ${GATEWAY_ENGINES.join(' or ')} (SVC_GATEWAY_ENGINE; default ${GATEWAY_ENGINES[0]})`,
        },
        WORKERS_OPTION,
        { flags: '--json', description: "once ready, print one JSON object with the gateway's URL" },
      ],
      action: async (o, ctx) => {
        const config = ctx.settings(
          { host: o.host, 'gateway.port': o.gatewayPort, 'gateway.id': o.id, 'gateway.engine': o.engine, 'gateway.workers': o.workers },
          { controlList: true },
        );
        const { run } = lazy<typeof import('./gateway.js')>(__dirname, 'gateway');
        return run({ config, json: o.json === true }, { out: ctx.out() });
      },
    },
  ],
};

export const up: ProcessSpec = {
  name: 'up',
  description: 'run control and a gateway as two processes; Ctrl-C stops both',
  options: [
    ...PORT_OPTIONS,
    DATABASE_URL_OPTION,
    { flags: '--engine <engine>', description: `the gateway's proxy engine: ${GATEWAY_ENGINES.join(' or ')} (SVC_GATEWAY_ENGINE)` },
    WORKERS_OPTION,
    { flags: '--json', description: 'once ready, print one JSON object with the four URLs and the pids' },
    {
      flags: '--sample',
      description: 'also start a local sample provider and register it as the endpoint sample (/ok, /fail, /slow?ms=, /reset)',
    },
  ],
  action: async (o, ctx) => {
    // Fail fast on bad settings, and on an operator's token where root's belongs.
    const config = refuseOperatorRootToken(
      ctx.settings({ ...portSettings(o), databaseUrl: o.databaseUrl, 'gateway.engine': o.engine, 'gateway.workers': o.workers }),
    );
    // Each child gets the global options and the flags that concern its role.
    const g = ctx.globals();
    const common: string[] = [];
    if (g.config) common.push('--config', g.config);
    if (g.dataDir) common.push('--data-dir', g.dataDir);
    const flag = (name: string, value: unknown) => (typeof value === 'string' ? [name, value] : []);
    const controlArgs = [
      ...common,
      ...flag('--host', o.host),
      ...flag('--control-port', o.controlPort),
      ...flag('--api-port', o.apiPort),
      ...flag('--indexer-port', o.indexerPort),
    ];
    // A database URL goes to control in its environment, not its arguments: a password must not
    // show in the process list or in up's messages, which quote a child's arguments.
    const databaseUrl = typeof o.databaseUrl === 'string' ? o.databaseUrl : undefined;
    if (databaseUrl === '') controlArgs.push('--database-url', ''); // SQLite, over env and file (an empty env value is ignored)
    const controlEnv: NodeJS.ProcessEnv = databaseUrl ? { SVC_DATABASE_URL: databaseUrl } : {};
    const gatewayArgs = [
      ...common,
      ...flag('--host', o.host),
      ...flag('--gateway-port', o.gatewayPort),
      ...flag('--engine', o.engine),
      ...flag('--workers', o.workers),
    ];
    const { run } = lazy<typeof import('../up.js')>(__dirname, '../up');
    return run(
      {
        passArgs: [],
        dataDir: config.dataDir,
        json: o.json === true,
        ...(o.sample === true ? { sample: { config, tokenFile: g.tokenFile } } : {}),
        roles: [
          { role: 'control', args: () => controlArgs, env: controlEnv },
          { role: 'gateway', args: (ready) => [...gatewayArgs, '--control', ready.find((r) => r.role === 'control')!.urls.control!] },
        ],
      },
      { out: ctx.out() },
    );
  },
};
