/**
 * The shape of svcctl's command table (`commands/index.ts`) and how it becomes commander
 * commands. A command's module is loaded only when the command runs (`lazy`), so `svcctl --help`
 * and every command start without loading the others.
 */
import { join } from 'node:path';
import type { Command } from 'commander';
import type { Config } from '../config/load';
import type { Deps, GlobalOptions, SettingsOptions } from './deps';
import type { Output } from './output';

/** For options that may be given more than once: the values in order. */
export const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

/** A command module's entry point: the exit code. */
export type Runner<O> = (opts: O, deps: Deps) => Promise<number>;

export interface ArgumentSpec {
  /** `<name>` (required) or `[name]` (optional). */
  name: string;
  description?: string;
}

export interface OptionSpec {
  /** As commander takes them: `--limit <n>`, `--wait`, `--no-display-name`. */
  flags: string;
  description: string;
  /** The command fails (usage) without it. */
  required?: true;
  /** May be given more than once; the values are collected in a list. */
  repeatable?: true;
}

/** A command that calls control's admin API: it gets `--json`, and `run(shape(args, opts), deps)`. */
export interface LeafSpec<O = unknown> {
  name: string;
  description: string;
  args?: readonly ArgumentSpec[];
  options?: readonly OptionSpec[];
  /** The command's module (`lazy(__dirname, 'verb')`). */
  load: () => { run: Runner<O> };
  /** The module's options from the command line's arguments and options. */
  shape: (args: string[], opts: Record<string, unknown>) => O;
}

/** What a command that runs a process (`serve …`, `up`) gets besides its options. */
export interface ProcessContext {
  /** The global options (`--config`, `--control`, `--data-dir`). */
  globals(): GlobalOptions;
  /** The settings from the config file, the environment and `flags` (dotted keys), checked. */
  settings(flags: Record<string, unknown>, options?: SettingsOptions): Readonly<Config>;
  /** Where the process reports. */
  out(): Output;
}

/** A command that runs a process in this one; it declares its own `--json`. */
export interface ProcessSpec {
  name: string;
  description: string;
  options: readonly OptionSpec[];
  action: (opts: Record<string, unknown>, ctx: ProcessContext) => Promise<number>;
}

/** A noun with its verbs (`keys issue`, `keys list`, …). */
export interface GroupSpec {
  name: string;
  description: string;
  commands: readonly (LeafSpec | ProcessSpec)[];
}

export type CommandSpec = GroupSpec | LeafSpec | ProcessSpec;

/** `--wait` and its bound, for commands that change what the gateways enforce (`commands/wait.ts`). */
export const WAIT_OPTIONS: readonly OptionSpec[] = [
  { flags: '--wait', description: 'return only once every connected gateway enforces it' },
  { flags: '--timeout <duration>', description: 'bound on --wait (default 30s)' },
];

/** A leaf command whose `shape` gives what its module's `run` takes. */
export const leaf = <O>(spec: LeafSpec<O>): LeafSpec => spec as LeafSpec;

/**
 * Load `name` (a module next to the caller: pass its `__dirname`) on first use. `require` (not
 * `import()`) so the CommonJS build and the TypeScript test loader resolve it the same way.
 */
export function lazy<T>(dir: string, name: string): T {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loading on first use is the point; see above
  return require(join(dir, name)) as T;
}

/** How a registered command reports: its exit code, and the deps of admin commands. */
export interface Registration {
  /** The exit code of the command that ran. */
  result: { code: number };
  deps(): Promise<Deps>;
  process: ProcessContext;
}

function addOptions(cmd: Command, options: readonly OptionSpec[] | undefined): void {
  for (const o of options ?? []) {
    if (o.required) cmd.requiredOption(o.flags, o.description);
    else if (o.repeatable) cmd.option(o.flags, o.description, collect);
    else cmd.option(o.flags, o.description);
  }
}

/** Add `spec` (and, for a group, its commands) to `parent`. */
export function register(parent: Command, spec: CommandSpec, reg: Registration): void {
  const cmd = parent.command(spec.name);
  if ('commands' in spec) {
    cmd.description(spec.description);
    for (const child of spec.commands) register(cmd, child, reg);
    return;
  }
  if ('action' in spec) {
    cmd.description(spec.description);
    addOptions(cmd, spec.options);
    cmd.action(async (_o, command: Command) => {
      reg.result.code = await spec.action(command.opts(), reg.process);
    });
    return;
  }
  for (const a of spec.args ?? []) cmd.argument(a.name, a.description);
  cmd.description(spec.description);
  addOptions(cmd, spec.options);
  cmd.option('--json', 'print the result as JSON with stable fields');
  cmd.action(async (...actionArgs: unknown[]) => {
    const command = actionArgs[actionArgs.length - 1] as Command;
    const { run } = spec.load();
    reg.result.code = await run(spec.shape(command.args, command.opts()), await reg.deps());
  });
}
