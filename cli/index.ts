#!/usr/bin/env node
/**
 * `svcctl`: noun-verb commands over control's admin API (docs/design.md §10). This file builds the
 * program from the command table (`commands/index.ts`, registered by `register.ts`); each
 * command lives in `commands/<noun>/<verb>.ts` as `run(opts, deps)` and is loaded when invoked.
 * One top-level catch maps errors to the documented exit codes.
 */
import { Command, CommanderError } from 'commander';
import { COMMANDS } from './commands/index';
import type { Deps, GlobalOptions } from './deps';
import { CliError, EXIT_FAILURE, EXIT_OK, EXIT_USAGE, UsageError } from './exit-codes';
import { processOutput, terminalText, type Output } from './output';
import { collect, lazy, register, type Registration } from './register';

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
    .option(
      '--control <url>',
      'control admin URL (default: SVC_CONTROL_URL, the running control in the data dir, or 127.0.0.1:7073); serve gateway takes it once per control, in the order to try them',
      collect,
    )
    .option('--data-dir <dir>', 'data directory (default: SVC_DATA_DIR or ./data)')
    .option(
      '--token-file <file>',
      "file holding the token to present: an operator's (default: SVC_ADMIN_TOKEN, then the data dir's admin.token)",
    )
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
  const deps = (): typeof import('./deps.js') => lazy(__dirname, 'deps');
  const reg: Registration = {
    result,
    deps: () => Promise.resolve(options.deps ? options.deps(globals()) : deps().buildDeps(globals(), env)),
    process: {
      globals,
      settings: (flags, settingsOptions) => deps().loadSettings(globals(), env, flags, settingsOptions),
      out: () => options.out ?? processOutput(),
    },
  };
  for (const spec of COMMANDS) register(program, spec, reg);
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
    // Its code (ours, `SVC_ERR_*`, or Node's, `ECONNRESET`) is what a script or a report can match.
    const code = (err as { code?: unknown } | null)?.code;
    const coded = typeof code === 'string' && code !== '' ? ` (${code})` : '';
    errorLine(`svcctl: unexpected error${coded}: ${(err as Error | null)?.message ?? String(err)}`);
    return EXIT_FAILURE;
  }
}

if (require.main === module) {
  void main(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}
