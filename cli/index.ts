#!/usr/bin/env node
/**
 * `svcctl`: noun-verb commands over control's admin API (DESIGN §10). This file only
 * registers commands; each lives in `commands/<noun>/<verb>.ts` as `run(opts, deps)` and is
 * loaded when invoked. One top-level catch maps errors to the documented exit codes.
 */
import { Command, CommanderError } from 'commander';
import { GATEWAY_ENGINES } from '../protocol/engines';
import type { Deps, GlobalOptions } from './deps';
import { CliError, EXIT_FAILURE, EXIT_OK, EXIT_USAGE, UsageError } from './exit-codes';
import { terminalText, type Output } from './output';

type Runner<O> = (opts: O, deps: Deps) => Promise<number>;

/**
 * Load a module on first use. `require` (not `import()`) so the CommonJS build and the
 * TypeScript test loader resolve it the same way.
 */
function load<T>(id: string): Promise<T> {
  return Promise.resolve(require(id) as T);
}

const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

export interface MainOptions {
  env?: NodeJS.ProcessEnv;
  /** Build deps for admin commands (tests inject an in-process client and memory output). */
  deps?: (global: GlobalOptions) => Deps;
  out?: Output;
}

export function buildProgram(options: MainOptions, result: { code: number }): Command {
  const env = options.env ?? process.env;
  const program = new Command('svcctl')
    .description('Operate svc: keys, flags, endpoints, changelog and the processes that serve them.')
    .option('--config <file>', 'JSON settings file (then env SVC_*, then flags)')
    .option('--control <url>', 'control admin URL (default: SVC_CONTROL_URL, the running control in the data dir, or 127.0.0.1:7073)')
    .option('--data-dir <dir>', 'data directory (default: SVC_DATA_DIR or ./data)')
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride();
  if (options.out) {
    const out = options.out;
    program.configureOutput({ writeOut: (s) => out.line(s.trimEnd()), writeErr: (s) => out.error(s.trimEnd()) });
  } else {
    // Parse errors echo what was typed; keep control characters in it off the terminal too.
    program.configureOutput({ writeErr: (s) => void process.stderr.write(terminalText(s)) });
  }

  const globals = (): GlobalOptions => program.opts<GlobalOptions>();
  const depsFor = async (): Promise<Deps> => {
    if (options.deps) return options.deps(globals());
    const { buildDeps } = await load<typeof import('./deps.js')>('./deps');
    return buildDeps(globals(), env);
  };
  /** Wire a leaf command: add `--json`, load its module on use, run it, record the exit code. */
  const leaf = <O>(cmd: Command, load: () => Promise<{ run: Runner<O> }>, shape: (args: string[], opts: Record<string, unknown>) => O) => {
    cmd.option('--json', 'print the result as JSON with stable fields');
    cmd.action(async (...actionArgs: unknown[]) => {
      const command = actionArgs[actionArgs.length - 1] as Command;
      const args = command.args;
      const opts = command.opts();
      const { run } = await load();
      result.code = await run(shape(args, opts), await depsFor());
    });
    return cmd;
  };

  // keys -------------------------------------------------------------------------------
  const keys = program.command('keys').description('issue, inspect and revoke API keys');
  leaf(
    keys
      .command('issue')
      .description('issue a key; the plaintext is printed once')
      .option('--name <name>', 'label for the key')
      .option('--wallet <address>', 'payout wallet (Solana or EVM)')
      .option('--endpoint <id>', 'limit the key to an endpoint (repeatable; default: all)', collect)
      .option('--expires <duration>', 'expire after e.g. 30d, 12h')
      .option('--limit <rate>', 'per-key limit, e.g. 60/min (default: config limits.key*)'),
    () => load<typeof import('./commands/keys/issue.js')>('./commands/keys/issue'),
    (_a, o) => o,
  );
  leaf(
    keys
      .command('list')
      .description('list keys, newest first (never their plaintext); follows every page unless --limit or --cursor')
      .option('--status <status>', 'active, expired or revoked (filtered by control)')
      .option('--limit <n>', 'print one page of at most N keys (1-1000) and the cursor of the next')
      .option('--cursor <cursor>', 'print the page that starts at this next_cursor'),
    () => load<typeof import('./commands/keys/list.js')>('./commands/keys/list'),
    (_a, o) => o,
  );
  leaf(keys.command('show').argument('<id>').description('show one key'), () => load<typeof import('./commands/keys/show.js')>('./commands/keys/show'), ([id], o) => ({ ...o, id: id! }));
  leaf(
    keys
      .command('revoke')
      .argument('<id>')
      .description('revoke a key now')
      .option('--wait', 'return only once every connected gateway enforces it')
      .option('--timeout <duration>', 'bound on --wait (default 30s)'),
    () => load<typeof import('./commands/keys/revoke.js')>('./commands/keys/revoke'),
    ([id], o) => ({ ...o, id: id! }),
  );
  leaf(
    keys.command('rotate').argument('<id>').description('replace the secret; the old one works for the grace period').option('--grace <duration>', 'how long the old secret keeps working (default 24h; 0 = none)'),
    () => load<typeof import('./commands/keys/rotate.js')>('./commands/keys/rotate'),
    ([id], o) => ({ ...o, id: id! }),
  );
  leaf(
    keys
      .command('lift')
      .argument('<id>')
      .description('temporarily raise a key’s limit')
      .requiredOption('--limit <rate>', 'e.g. 600/min')
      .requiredOption('--for <duration>', 'e.g. 2h'),
    () => load<typeof import('./commands/keys/lift.js')>('./commands/keys/lift'),
    ([id], o) => ({ ...o, id: id! }) as { id: string; limit: string; for: string },
  );
  leaf(
    keys.command('wallet').argument('<id>').argument('[address]').description('attach or change the payout wallet').option('--detach', 'remove the wallet'),
    () => load<typeof import('./commands/keys/wallet.js')>('./commands/keys/wallet'),
    ([id, address], o) => ({ ...o, id: id!, ...(address !== undefined ? { address } : {}) }),
  );

  // flag -------------------------------------------------------------------------------
  const flag = program.command('flag').description('runtime flags (beta_gate_enabled, maintenance_mode)');
  leaf(
    flag
      .command('set')
      .argument('<name>', 'beta_gate_enabled (or system_flags.beta_gate_enabled), maintenance_mode')
      .argument('<value>', 'on or off')
      .description('set a flag; the change is announced in the changelog')
      .option('--note <text>', 'why (shown in the changelog)')
      .option('--wait', 'return only once every connected gateway enforces it')
      .option('--timeout <duration>', 'bound on --wait (default 30s)'),
    () => load<typeof import('./commands/flag/set.js')>('./commands/flag/set'),
    ([name, value], o) => ({ ...o, name: name!, value: value! }),
  );
  leaf(flag.command('get').argument('<name>').description('show a flag'), () => load<typeof import('./commands/flag/get.js')>('./commands/flag/get'), ([name], o) => ({ ...o, name: name! }));
  leaf(flag.command('list').description('list flags'), () => load<typeof import('./commands/flag/list.js')>('./commands/flag/list'), (_a, o) => o);

  // endpoints --------------------------------------------------------------------------
  const endpoints = program.command('endpoints').description('wrapped upstream endpoints');
  const endpointOptions = (cmd: Command) =>
    cmd
      .option('--upstream <url>', 'upstream base URL (http:// or https://)')
      .option('--display-name <name>', 'name shown on the public pages (never the upstream URL or id)')
      .option('--no-display-name', 'remove the display name (update)')
      .option('--methods <list>', 'methods besides POST, e.g. GET,PUT')
      .option('--price <micro>', 'principal per call, micro-units')
      .option('--premium <micro>', 'premium per call, micro-units')
      .option('--sla-ms <ms>', 'latency SLA; slower 2xx answers are latency breaches')
      .option('--timeout-ms <ms>', 'upstream timeout')
      .option('--refund-cap-per-hour <micro>', 'most refunded per hour (0 = no cap)')
      .option('--treasury-fee-bps <bps>', 'share of premiums to the treasury')
      .option('--header <header>', "inject 'Name: value' upstream (repeatable; write-only)", collect)
      .option('--response-schema <file>', 'JSON schema file 2xx JSON answers must match (else schema_mismatch)')
      .option('--no-response-schema', 'remove the response schema (update)');
  leaf(endpointOptions(endpoints.command('add').argument('<id>').description('register an endpoint')), () => load<typeof import('./commands/endpoints/add.js')>('./commands/endpoints/add'), ([id], o) => ({ ...o, id: id! }));
  leaf(endpointOptions(endpoints.command('update').argument('<id>').description('change an endpoint')), () => load<typeof import('./commands/endpoints/update.js')>('./commands/endpoints/update'), ([id], o) => ({ ...o, id: id! }));
  leaf(endpoints.command('list').description('list endpoints'), () => load<typeof import('./commands/endpoints/list.js')>('./commands/endpoints/list'), (_a, o) => o);
  leaf(endpoints.command('show').argument('<id>').description('show an endpoint'), () => load<typeof import('./commands/endpoints/show.js')>('./commands/endpoints/show'), ([id], o) => ({ ...o, id: id! }));
  leaf(endpoints.command('remove').argument('<id>').description('remove an endpoint'), () => load<typeof import('./commands/endpoints/remove.js')>('./commands/endpoints/remove'), ([id], o) => ({ ...o, id: id! }));

  // changelog --------------------------------------------------------------------------
  const changelog = program.command('changelog').description('the public changelog');
  leaf(changelog.command('add').argument('<text>').description('add an operator notice'), () => load<typeof import('./commands/changelog/add.js')>('./commands/changelog/add'), ([text], o) => ({ ...o, text: text! }));
  leaf(changelog.command('list').description('list entries, newest first').option('--limit <n>', 'how many (default 50)'), () => load<typeof import('./commands/changelog/list.js')>('./commands/changelog/list'), (_a, o) => o);

  // applications -----------------------------------------------------------------------
  const applications = program.command('applications').description('review access applications (answered within 24 hours)');
  leaf(
    applications
      .command('list')
      .description('list applications in review order: pending by priority score, then oldest')
      .option('--pending', 'only applications waiting for an answer')
      .option('--overdue', 'only pending applications past the 24-hour answer target')
      .option('--testers', 'only applicants who opted in to give feedback'),
    () => load<typeof import('./commands/applications/list.js')>('./commands/applications/list'),
    (_a, o) => o,
  );
  leaf(applications.command('show').argument('<id>').description('show an application, its key and its delivery log'), () => load<typeof import('./commands/applications/show.js')>('./commands/applications/show'), ([id], o) => ({ ...o, id: id! }));
  leaf(
    applications
      .command('approve')
      .argument('<id>')
      .description('issue a key bound to the application and deliver it (operator notifier: printed once)')
      .option('--endpoint <id>', 'limit the key to an endpoint (repeatable; default: all)', collect)
      .option('--expires <duration>', 'expire the key after e.g. 30d'),
    () => load<typeof import('./commands/applications/approve.js')>('./commands/applications/approve'),
    ([id], o) => ({ ...o, id: id! }),
  );
  leaf(
    applications.command('reject').argument('<id>').description('reject an application; no key is issued').option('--reason <text>', 'why (kept with the application)'),
    () => load<typeof import('./commands/applications/reject.js')>('./commands/applications/reject'),
    ([id], o) => ({ ...o, id: id! }),
  );
  leaf(
    applications
      .command('redeliver')
      .argument('<id>')
      .description('give the approved application’s key a new secret and deliver it again')
      .option('--to-operator', 'print the new key to you instead of using the configured notifier'),
    () => load<typeof import('./commands/applications/redeliver.js')>('./commands/applications/redeliver'),
    ([id], o) => ({ ...o, id: id! }),
  );
  leaf(
    applications
      .command('add')
      .description('record an application received over the direct-contact fallback')
      .option('--building <text>', 'what the applicant is building')
      .option('--contact-name <name>', 'contact name')
      .option('--wallet <address>', 'optional Solana or EVM wallet')
      .option('--social-url <url>', 'project or personal social link')
      .option('--messaging-handle <handle>', 'where the key is sent')
      .option('--type <type>', 'ai_agent, api_merchant or ai_agent_merchant')
      .option('--api <name>', 'an API the agent pays for (repeatable; AI agents only)', collect)
      .option('--why <text>', 'why they want to try svc (merchants, and agents paying for no API)')
      .option('--feedback', 'the applicant will give feedback (early tester)')
      .option('--received-at <time>', 'when they got in touch (ISO 8601; default now)'),
    () => load<typeof import('./commands/applications/add.js')>('./commands/applications/add'),
    (_a, o) => o,
  );

  // money ------------------------------------------------------------------------------
  const pool = program.command('pool').description('the coverage pool (amounts: micro-units, or units with a decimal point)');
  leaf(
    pool.command('fund').argument('<amount>', '12500000 (micro-units) or 12.5 (units)').description('move money from outside into the pool').option('--note <text>', 'where the money came from'),
    () => load<typeof import('./commands/pool/fund.js')>('./commands/pool/fund'),
    ([amount], o) => ({ ...o, amount: amount! }),
  );
  leaf(pool.command('show').description('pool balance, premiums, refunds, shortfall'), () => load<typeof import('./commands/pool/show.js')>('./commands/pool/show'), (_a, o) => o);
  const settlerCmd = program.command('settler').description('the settler: settles call outcomes on the ledger');
  leaf(settlerCmd.command('status').description('state, backlog, last batch'), () => load<typeof import('./commands/settler/status.js')>('./commands/settler/status'), (_a, o) => o);
  leaf(settlerCmd.command('pause').description('stop scheduled settlement (kept across restarts)'), () => load<typeof import('./commands/settler/pause.js')>('./commands/settler/pause'), (_a, o) => o);
  leaf(settlerCmd.command('resume').description('settle on the cadence again'), () => load<typeof import('./commands/settler/resume.js')>('./commands/settler/resume'), (_a, o) => o);
  leaf(settlerCmd.command('run-once').description('settle everything received until now, also while paused'), () => load<typeof import('./commands/settler/run-once.js')>('./commands/settler/run-once'), (_a, o) => o);
  const ledgerCmd = program.command('ledger').description('the double-entry ledger');
  leaf(ledgerCmd.command('verify').description('check the ledger invariants; exit 1 with the first violation'), () => load<typeof import('./commands/ledger/verify.js')>('./commands/ledger/verify'), (_a, o) => o);
  leaf(
    ledgerCmd.command('balances').description('account balances').option('--account <account>', 'one account (pool, treasury, external, key:<id>) or a prefix ending in ":"'),
    () => load<typeof import('./commands/ledger/balances.js')>('./commands/ledger/balances'),
    (_a, o) => o,
  );
  const receiptsCmd = program.command('receipts').description('signed settlement receipts: one per batch, chained');
  leaf(
    receiptsCmd
      .command('verify')
      .description("walk the receipt chain from the indexer's public reads; exit 1 naming the first bad batch")
      .option('--indexer <url>', "the indexer's URL (default: from control's status)")
      .option('--jwks <file>', 'verify against this JWKS instead of the published /api/receipts/keys'),
    () => load<typeof import('./commands/receipts/verify.js')>('./commands/receipts/verify'),
    (_a, o) => o,
  );
  leaf(
    receiptsCmd.command('rotate-key').description('sign receipts with a new key from the next batch on; old public keys stay published'),
    () => load<typeof import('./commands/receipts/rotate-key.js')>('./commands/receipts/rotate-key'),
    (_a, o) => o,
  );
  const payouts = program.command('payouts').description('refunds owed to wallets');
  leaf(
    payouts.command('list').description('what is owed per wallet (and to keys without a wallet)').option('--wallet <address>', 'one wallet'),
    () => load<typeof import('./commands/payouts/list.js')>('./commands/payouts/list'),
    (_a, o) => o,
  );
  leaf(
    payouts
      .command('mark-paid')
      .description('record a payment made to a wallet outside svc (never more than owed)')
      .requiredOption('--wallet <address>', 'the wallet paid')
      .requiredOption('--amount <amount>', 'micro-units, or units with a decimal point')
      .requiredOption('--reference <ref>', 'the payment reference (unique)'),
    () => load<typeof import('./commands/payouts/mark-paid.js')>('./commands/payouts/mark-paid'),
    (_a, o) => o as { wallet: string; amount: string; reference: string },
  );

  // gateways ---------------------------------------------------------------------------
  const gatewaysCmd = program.command('gateways').description('gateways control knows: limit shares, weights, applied versions');
  leaf(
    gatewaysCmd.command('list').description('every gateway: connected, live, weight, share of key limits, applied version, engine, last seen'),
    () => load<typeof import('./commands/gateways/list.js')>('./commands/gateways/list'),
    (_a, o) => o,
  );
  leaf(
    gatewaysCmd
      .command('weight')
      .argument('<id>', 'the gateway id')
      .argument('<weight>', 'a number above 0 (default weight 1); shares follow the weights of the live gateways')
      .description('weight a gateway in the split of key limits (for load balancers that send it more or less traffic)'),
    () => load<typeof import('./commands/gateways/weight.js')>('./commands/gateways/weight'),
    ([id, weight], o) => ({ ...o, id: id!, weight: weight! }),
  );

  // status -----------------------------------------------------------------------------
  leaf(program.command('status').description('control, flags, counts and gateways'), () => load<typeof import('./commands/status.js')>('./commands/status'), (_a, o) => o);
  leaf(program.command('stats').description('the indexer’s statistics: pool, settlements, calls, recent activity'), () => load<typeof import('./commands/stats.js')>('./commands/stats'), (_a, o) => o);

  // processes --------------------------------------------------------------------------
  const portFlags = (cmd: Command) =>
    cmd
      .option('--host <host>', 'bind address (SVC_HOST)')
      .option('--control-port <port>', 'admin + sync port (SVC_CONTROL_PORT)')
      .option('--api-port <port>', 'public read API port (SVC_API_PORT)')
      .option('--indexer-port <port>', 'indexer port (SVC_INDEXER_PORT)')
      .option('--gateway-port <port>', 'gateway port (SVC_GATEWAY_PORT)');
  const settingsFromFlags = (o: Record<string, unknown>) => ({
    host: o.host,
    'control.port': o.controlPort,
    'api.port': o.apiPort,
    'indexer.port': o.indexerPort,
    'gateway.port': o.gatewayPort,
  });
  const serve = program.command('serve').description('run one role in this process');
  portFlags(serve.command('control').description('run control: admin + sync, public API, indexer, settler'))
    .option('--json', 'once ready, print one JSON object with the listeners\' URLs')
    .action(async (_o, cmd: Command) => {
    const { loadSettings } = await load<typeof import('./deps.js')>('./deps');
    const { processOutput } = await load<typeof import('./output.js')>('./output');
    const config = loadSettings(globals(), env, settingsFromFlags(cmd.opts()));
    const { run } = await load<typeof import('./commands/serve/control.js')>('./commands/serve/control');
    result.code = await run({ config, json: cmd.opts().json === true }, { out: options.out ?? processOutput() });
  });
  serve
    .command('gateway')
    .description('run a gateway that takes its configuration from control')
    .option('--host <host>', 'bind address (SVC_HOST)')
    .option('--gateway-port <port>', 'port (SVC_GATEWAY_PORT)')
    .option('--id <id>', 'gateway id, unique per control (SVC_GATEWAY_ID; default gw-<hostname>)')
    .option('--engine <engine>', `proxy engine: ${GATEWAY_ENGINES.join(' or ')} (SVC_GATEWAY_ENGINE; default ${GATEWAY_ENGINES[0]})`)
    .option('--json', 'once ready, print one JSON object with the gateway\'s URL')
    .action(async (_o, cmd: Command) => {
      const { loadSettings } = await load<typeof import('./deps.js')>('./deps');
      const { processOutput } = await load<typeof import('./output.js')>('./output');
      const o = cmd.opts();
      const config = loadSettings(globals(), env, { host: o.host, 'gateway.port': o.gatewayPort, 'gateway.id': o.id, 'gateway.engine': o.engine });
      const { run } = await load<typeof import('./commands/serve/gateway.js')>('./commands/serve/gateway');
      result.code = await run({ config, json: o.json === true }, { out: options.out ?? processOutput() });
    });
  portFlags(program.command('up').description('run control and a gateway as two processes; Ctrl-C stops both'))
    .option('--engine <engine>', `the gateway's proxy engine: ${GATEWAY_ENGINES.join(' or ')} (SVC_GATEWAY_ENGINE)`)
    .option('--json', 'once ready, print one JSON object with the four URLs and the pids')
    .action(async (_o, cmd: Command) => {
    const { loadSettings } = await load<typeof import('./deps.js')>('./deps');
    const { processOutput } = await load<typeof import('./output.js')>('./output');
    loadSettings(globals(), env, { ...settingsFromFlags(cmd.opts()), 'gateway.engine': cmd.opts().engine }); // fail fast on bad settings
    // Each child gets the global options and the flags that concern its role.
    const g = globals();
    const common: string[] = [];
    if (g.config) common.push('--config', g.config);
    if (g.dataDir) common.push('--data-dir', g.dataDir);
    const o = cmd.opts();
    const flag = (name: string, value: unknown) => (value === undefined ? [] : [name, String(value)]);
    const controlArgs = [...common, ...flag('--host', o.host), ...flag('--control-port', o.controlPort), ...flag('--api-port', o.apiPort), ...flag('--indexer-port', o.indexerPort)];
    const gatewayArgs = [...common, ...flag('--host', o.host), ...flag('--gateway-port', o.gatewayPort), ...flag('--engine', o.engine)];
    const { run } = await load<typeof import('./commands/up.js')>('./commands/up');
    result.code = await run(
      {
        passArgs: [],
        json: o.json === true,
        roles: [
          { role: 'control', args: () => controlArgs },
          { role: 'gateway', args: (ready) => [...gatewayArgs, '--control', ready.find((r) => r.role === 'control')!.urls.control!] },
        ],
      },
      { out: options.out ?? processOutput() },
    );
  });
  return program;
}

/** Run svcctl with `argv` (without node and script); resolves to the exit code. */
export async function main(argv: string[], options: MainOptions = {}): Promise<number> {
  const result = { code: EXIT_OK };
  const program = buildProgram(options, result);
  const errorLine = (text: string) => (options.out ? options.out.error(text) : process.stderr.write(terminalText(text) + '\n'));
  try {
    await program.parseAsync(argv, { from: 'user' });
    return result.code;
  } catch (err) {
    if (err instanceof CommanderError) {
      // Help and version are not errors; commander already printed the parse message.
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.code === 'commander.help') return EXIT_OK;
      return err.exitCode === 0 ? EXIT_OK : EXIT_USAGE;
    }
    if (err instanceof UsageError) {
      errorLine(`svcctl: ${err.message}`);
      return EXIT_USAGE;
    }
    if (err instanceof CliError) {
      errorLine(`svcctl: ${err.message}`);
      return err.exitCode;
    }
    errorLine(`svcctl: unexpected error: ${(err as Error).message ?? String(err)}`);
    return EXIT_FAILURE;
  }
}

if (require.main === module) {
  void main(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}


