/**
 * Loads settings in this order, later winning: JSON file (`--config`) → env `SVC_*` →
 * command-line flags. Validates once against `ConfigSchema` and freezes the result.
 *
 * Every setting `a.bB` has the env name `SVC_A_B_B` (e.g. `gateway.port` →
 * `SVC_GATEWAY_PORT`, `dataDir` → `SVC_DATA_DIR`). An invalid value stops start-up with a
 * `ConfigError` that names the key, where it came from, the bad value and what is allowed.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { maskDatabaseUrl, UNPARSABLE_DATABASE_URL } from '../protocol/database-url';
import { ConfigSchema, type Config } from './schema';
import { CodedError } from '../protocol/coded-error';

export type { Config } from './schema';

export interface ConfigSources {
  /** Path of a JSON config file. */
  file?: string | undefined;
  /** Environment; only `SVC_*` variables are read. */
  env?: NodeJS.ProcessEnv;
  /** Flag overrides by dotted key (`gateway.port`). Strings are coerced like env values. */
  flags?: Record<string, unknown>;
}

export interface ConfigIssue {
  key: string;
  source: string;
  value: unknown;
  allowed: string;
}

export class ConfigError extends CodedError {
  override readonly code = 'SVC_ERR_CONFIG';
  readonly issues: ConfigIssue[];
  constructor(issues: ConfigIssue[], message?: string) {
    super(message ?? issues.map(formatIssue).join('\n'));
    this.issues = issues;
  }
}

function formatIssue(issue: ConfigIssue): string {
  const shown = issue.value === undefined ? '(missing)' : JSON.stringify(issue.value);
  return `invalid setting ${issue.key} (from ${issue.source}): ${shown}; allowed: ${issue.allowed}`;
}

interface Leaf {
  path: string[];
  /** How a string from env or a flag becomes the value: `list` splits it at commas. */
  kind: 'number' | 'string' | 'list' | 'other';
  allowed: string;
}

/**
 * Walk the schema to list its leaves, through zod 4's public API only: `type` names the kind
 * of schema, objects expose `shape`, wrappers `unwrap()`, pipes `in`.
 */
function collectLeaves(schema: z.ZodType, path: string[], out: Leaf[], description?: string): void {
  const desc = description ?? schema.description;
  switch (schema.type) {
    case 'object':
      for (const [key, child] of Object.entries((schema as z.ZodObject<Record<string, z.ZodType>>).shape))
        collectLeaves(child, [...path, key], out);
      return;
    case 'default':
    case 'prefault':
    case 'optional':
    case 'nullable':
      collectLeaves((schema as z.ZodDefault | z.ZodPrefault | z.ZodOptional | z.ZodNullable).unwrap() as z.ZodType, path, out, desc);
      return;
    case 'pipe':
      collectLeaves((schema as z.ZodPipe).in as z.ZodType, path, out, desc);
      return;
    case 'number':
      out.push({ path, kind: 'number', allowed: desc ?? 'a number' });
      return;
    case 'string':
      out.push({ path, kind: 'string', allowed: desc ?? 'a string' });
      return;
    case 'enum':
      out.push({ path, kind: 'string', allowed: desc ?? 'one of the listed values' });
      return;
    case 'array':
      out.push({ path, kind: 'list', allowed: desc ?? 'a list' });
      return;
    case 'union': {
      // A number or a word (`gateway.workers`: a count or `auto`): digits from env or a flag are the number.
      const options = (schema as z.ZodUnion<z.ZodType[]>).options;
      const numeric = options.some((o) => o.type === 'number');
      out.push({ path, kind: numeric ? 'number' : 'other', allowed: desc ?? 'a valid value' });
      return;
    }
    default:
      out.push({ path, kind: 'other', allowed: desc ?? 'a valid value' });
  }
}

const LEAVES: readonly Leaf[] = (() => {
  const out: Leaf[] = [];
  collectLeaves(ConfigSchema, [], out);
  return out;
})();

/** `gateway.bodyLimitBytes` → `SVC_GATEWAY_BODY_LIMIT_BYTES`. */
export function envName(path: readonly string[]): string {
  return 'SVC_' + path.map((p) => p.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase()).join('_');
}

/** Every setting with its env name and allowed values (the table of docs/configuration.md). */
export function settingsTable(): { key: string; env: string; allowed: string; default: unknown }[] {
  const defaults = ConfigSchema.parse({});
  return LEAVES.map((leaf) => ({
    key: leaf.path.join('.'),
    env: envName(leaf.path),
    allowed: leaf.allowed,
    default: getPath(defaults, leaf.path),
  }));
}

function getPath(obj: unknown, path: readonly (string | number)[]): unknown {
  let cur: unknown = obj;
  for (const key of path) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string | number, unknown>)[key];
  }
  return cur;
}

function setPath(obj: Record<string, unknown>, path: readonly string[], value: unknown): void {
  let cur = obj;
  for (const key of path.slice(0, -1)) {
    const next = cur[key];
    if (next === null || typeof next !== 'object' || Array.isArray(next)) cur[key] = {};
    cur = cur[key] as Record<string, unknown>;
  }
  cur[path[path.length - 1]!] = value;
}

const NUMERIC = /^-?\d+(\.\d+)?$/;
/** Settings whose values are never echoed in an error. */
const SECRET_SETTINGS: ReadonlySet<string> = new Set(['adminToken', 'syncToken', 'metricsToken', 'applications.webhookSecret']);
/** Settings echoed in an error only as their mask shows them (a database URL without its password). */
const MASKED_SETTINGS: Readonly<Record<string, (value: unknown) => unknown>> = {
  databaseUrl: (value) => (typeof value === 'string' ? maskDatabaseUrl(value) : UNPARSABLE_DATABASE_URL),
};

/** A bad value as an error may show it. */
function shownValue(key: string, value: unknown): unknown {
  if (SECRET_SETTINGS.has(key)) return '(hidden)';
  const mask = MASKED_SETTINGS[key];
  return mask === undefined ? value : mask(value);
}

/**
 * A string from env or a flag as the leaf's type: a number, or for a list its comma-separated
 * entries with the spaces around each trimmed (an empty entry stays, and is refused).
 */
function coerce(leaf: Leaf, raw: unknown): unknown {
  if (typeof raw !== 'string') return raw;
  if (leaf.kind === 'number' && NUMERIC.test(raw.trim())) return Number(raw.trim());
  if (leaf.kind === 'list') return raw.split(',').map((entry) => entry.trim());
  return raw;
}

/** The setting an issue at `path` is about: `controlUrls.1` (an entry) is about `controlUrls`. */
function leafOf(path: readonly string[]): Leaf | undefined {
  return LEAVES.find((l) => l.path.length <= path.length && l.path.every((p, i) => p === path[i]));
}

/** Load, validate and freeze the configuration. Throws `ConfigError`. */
export function loadConfig(sources: ConfigSources = {}): Readonly<Config> {
  const raw: Record<string, unknown> = {};
  const origin = new Map<string, string>();

  if (sources.file !== undefined) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(readFileSync(sources.file, 'utf8'));
    } catch (err) {
      const reason = (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'file not found' : (err as Error).message;
      throw new ConfigError([], `cannot read config file ${sources.file}: ${reason}`);
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
      throw new ConfigError([], `config file ${sources.file} must contain a JSON object`);
    }
    Object.assign(raw, parsed);
    for (const leaf of LEAVES) {
      if (getPath(parsed, leaf.path) !== undefined) origin.set(leaf.path.join('.'), `config file ${sources.file}`);
    }
  }

  const env = sources.env ?? {};
  for (const leaf of LEAVES) {
    const name = envName(leaf.path);
    const value = env[name];
    if (value === undefined || value === '') continue;
    setPath(raw, leaf.path, coerce(leaf, value));
    origin.set(leaf.path.join('.'), `env ${name}`);
  }

  for (const [key, value] of Object.entries(sources.flags ?? {})) {
    if (value === undefined) continue;
    const leaf = LEAVES.find((l) => l.path.join('.') === key);
    if (!leaf) throw new ConfigError([{ key, source: 'flag', value, allowed: 'a known setting' }]);
    setPath(raw, leaf.path, coerce(leaf, value));
    origin.set(
      key,
      `flag --${key
        .replace(/\./g, '-')
        .replace(/([a-z0-9])([A-Z])/g, '$1-$2')
        .toLowerCase()}`,
    );
  }

  const result = ConfigSchema.safeParse(raw);
  if (!result.success) {
    const issues = result.error.issues.map((issue): ConfigIssue => {
      const unknownKeys = issue.code === 'unrecognized_keys' ? issue.keys : [];
      const issuePath = [...issue.path.map(String), ...unknownKeys.slice(0, 1)];
      const leaf = leafOf(issuePath);
      // A bad entry of a list shows the whole list, as it was given.
      const path = leaf?.kind === 'list' ? leaf.path : issuePath;
      const key = path.join('.') || '(root)';
      return {
        key,
        source: origin.get(key) ?? (unknownKeys.length > 0 ? 'config file' : 'the combined settings'),
        value: shownValue(key, getPath(raw, path)),
        // A cross-setting rule says what is allowed itself (`params.allowed`), in the light of the other setting.
        allowed:
          unknownKeys.length > 0
            ? 'no such setting'
            : issue.code === 'custom' && issue.params?.allowed === true
              ? issue.message
              : (leaf?.allowed ?? issue.message),
      };
    });
    throw new ConfigError(issues);
  }
  return deepFreeze(result.data);
}

function deepFreeze<T>(value: T): Readonly<T> {
  if (value !== null && typeof value === 'object') {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}

/** The control URL clients should use when none is configured. */
export function defaultControlUrl(config: Readonly<Config>): string {
  const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
  return config.controlUrl ?? `http://${host.includes(':') ? `[${host}]` : host}:${config.control.port}`;
}
