/**
 * Everything a command needs from the outside world, resolved once from the global options:
 * settings, where control listens, the admin token, the output and the clock.
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ConfigError, defaultControlUrl, loadConfig, type Config } from '../config/load';
import { RUNTIME_FILE, runtimeControlUrl } from '../protocol/runtime';
import { AdminClient } from './client';
import { UsageError } from './exit-codes';
import { IndexerClient } from './indexer-client';
import { processOutput, type Output } from './output';

export interface GlobalOptions {
  config?: string;
  /** Every `--control` given, in order (more than one only for `serve gateway`). */
  control?: string[];
  dataDir?: string;
  /** `--token-file`: the file holding the token svcctl presents (an operator's, or root's). */
  tokenFile?: string;
  json?: boolean;
}

export interface Deps {
  client: AdminClient;
  /** The indexer's public reads (`svcctl stats`, `receipts verify`); never given a token. */
  indexer: IndexerClient;
  out: Output;
  now: () => number;
}

const ADMIN_TOKEN_FILE = 'admin.token';

/**
 * Settings whose svcctl flag differs from the name derived from the setting (`controlUrl`
 * would read `--control-url`): a bad value names the flag the operator actually typed.
 */
const CLI_FLAG_NAMES: Readonly<Record<string, string>> = {
  controlUrl: '--control',
  controlUrls: '--control',
  'gateway.id': '--id',
  'gateway.engine': '--engine',
  'gateway.workers': '--workers',
};

/** The same error with each issue's source naming the flag as svcctl spells it. */
function withCliFlagNames(err: ConfigError): ConfigError {
  if (err.issues.length === 0) return err;
  let renamed = false;
  const issues = err.issues.map((issue) => {
    const flag = CLI_FLAG_NAMES[issue.key];
    if (flag === undefined || !issue.source.startsWith('flag ')) return issue;
    renamed = true;
    return { ...issue, source: `flag ${flag}` };
  });
  return renamed ? new ConfigError(issues) : err;
}

/** How a command takes the global `--control`. */
export interface SettingsOptions {
  /**
   * `serve gateway`: every `--control`, in order, is `controlUrls` (the controls it fails over
   * between, over any list or URL from the file or env). Elsewhere `--control` is `controlUrl`,
   * given at most once.
   */
  controlList?: boolean;
}

/** The `--control` flags as settings. */
function controlFlags(control: readonly string[] | undefined, options: SettingsOptions): Record<string, unknown> {
  if (control === undefined || control.length === 0) return {};
  if (options.controlList) return { controlUrls: [...control] };
  if (control.length > 1) throw new UsageError('--control may be given once (several only for serve gateway, one per control)');
  return { controlUrl: control[0] };
}

/** Load settings from `--config`, env and the global flags; a bad setting is a usage error. */
export function loadSettings(
  opts: GlobalOptions,
  env: NodeJS.ProcessEnv,
  flags: Record<string, unknown> = {},
  options: SettingsOptions = {},
): Readonly<Config> {
  try {
    return loadConfig({
      file: opts.config,
      env,
      flags: {
        ...flags,
        ...(opts.dataDir !== undefined ? { dataDir: opts.dataDir } : {}),
        ...controlFlags(opts.control, options),
      },
    });
  } catch (err) {
    if (err instanceof ConfigError) throw new UsageError(withCliFlagNames(err).message);
    throw err;
  }
}

function readTrimmed(path: string): string | null {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return null;
  }
}

/**
 * Where control listens: `--control` / `SVC_CONTROL_URL` / config file first, then the URL a
 * running control published in the data dir (`control.json`), then host and control port.
 */
export function resolveControlUrl(config: Readonly<Config>): string {
  if (config.controlUrl !== undefined) return config.controlUrl;
  // A missing, torn or foreign file falls through to the configured port.
  return runtimeControlUrl(readTrimmed(join(resolve(config.dataDir), RUNTIME_FILE))) ?? defaultControlUrl(config);
}

/**
 * The token svcctl presents: the one in `--token-file`, else `SVC_ADMIN_TOKEN` (or config),
 * else the data dir's `admin.token` (root's). So each operator runs svcctl with their own
 * token on a machine where root's file is readable too.
 */
export function resolveAdminToken(config: Readonly<Config>, tokenFile?: string): string | null {
  if (tokenFile !== undefined) {
    let token: string;
    try {
      token = readFileSync(tokenFile, 'utf8').trim();
    } catch (err) {
      throw new UsageError(`--token-file ${tokenFile} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    }
    if (token === '' || /\s/.test(token)) throw new UsageError(`--token-file ${tokenFile} must hold one token and nothing else`);
    return token;
  }
  return config.adminToken ?? readTrimmed(join(resolve(config.dataDir), ADMIN_TOKEN_FILE));
}

export function buildDeps(opts: GlobalOptions, env: NodeJS.ProcessEnv = process.env): Deps {
  const config = loadSettings(opts, env);
  return {
    client: new AdminClient({ baseUrl: resolveControlUrl(config), token: resolveAdminToken(config, opts.tokenFile) }),
    indexer: new IndexerClient(),
    out: processOutput(),
    now: Date.now,
  };
}
