/**
 * svcctl's option parsers (cli/options.ts): what each takes, and that a value it refuses is a
 * usage error (exit 2) naming the flag.
 */
import t from 'tap';
import { durationOption, flagOption, onOff, pageLimit, parseAmount, rateLimitOption, weightOption, wholeNumber } from '../../cli/options';
import { EXIT_USAGE, UsageError } from '../../cli/exit-codes';
import { runCli } from '../fixtures/cli';
import { startTestControl } from '../fixtures/control';

/** The parser's message for `value`, or its result. */
function outcome<T>(parse: () => T): T | { usage: string } {
  try {
    return parse();
  } catch (err) {
    if (err instanceof UsageError) return { usage: err.message };
    throw err;
  }
}

t.test('whole numbers', async (t) => {
  t.equal(wholeNumber('--price', '250'), 250);
  t.equal(wholeNumber('--price', ' 7 '), 7, 'surrounding spaces');
  for (const bad of ['', '-1', '1.5', '1e3', '0x10', 'ten'])
    t.match(
      outcome(() => wholeNumber('--price', bad)),
      { usage: /^--price must be a whole number/ },
      JSON.stringify(bad),
    );
  t.match(
    outcome(() => wholeNumber('--price', '9'.repeat(20))),
    { usage: '--price is too large' },
  );
});

t.test('page limits take 1 to the maximum, digits only', async (t) => {
  t.equal(pageLimit('--limit', '1', 1000), 1);
  t.equal(pageLimit('--limit', '1000', 1000), 1000);
  for (const bad of ['0', '1001', '1e2', '0x10', ' 5', '5.0', '', '-3', '12345678']) {
    t.same(
      outcome(() => pageLimit('--limit', bad, 1000)),
      { usage: '--limit must be an integer from 1 to 1000' },
      JSON.stringify(bad),
    );
  }
});

t.test('durations and rate limits', async (t) => {
  t.equal(durationOption('--expires', '30d'), 30 * 86_400);
  t.equal(durationOption('--for', '2h'), 7_200);
  t.match(
    outcome(() => durationOption('--expires', 'soon')),
    { usage: /^--expires "soon" is not a duration; use / },
  );
  t.same(rateLimitOption('--limit', '60/min'), { count: 60, window_seconds: 60 });
  t.match(
    outcome(() => rateLimitOption('--limit', '10/parsec')),
    { usage: /^--limit "10\/parsec" is not a rate limit; use / },
  );
});

t.test('amounts: micro-units, or units with a decimal point', async (t) => {
  t.equal(parseAmount('--amount', '12500000'), 12_500_000);
  t.equal(parseAmount('--amount', '12.5'), 12_500_000);
  t.match(
    outcome(() => parseAmount('--amount', '0.0000001')),
    { usage: /more than 6 decimals/ },
  );
  t.match(
    outcome(() => parseAmount('--amount', '0')),
    { usage: /at least 1 micro-unit/ },
  );
  t.equal(parseAmount('--cap', '0', 'allowed'), 0, 'a cap may be 0');
  t.equal(parseAmount('--cap', '0.000', 'allowed'), 0);
  t.equal(parseAmount('--cap', '.5', 'allowed'), 500_000);
  t.match(
    outcome(() => parseAmount('--cap', '-1', 'allowed')),
    { usage: /^--cap must be / },
  );
  t.match(
    outcome(() => parseAmount('AMOUNT', 'lots')),
    { usage: /^AMOUNT must be / },
  );
});

t.test('flag names, on/off and weights', async (t) => {
  t.equal(flagOption('system_flags.maintenance_mode'), 'maintenance_mode');
  t.match(
    outcome(() => flagOption('dark_mode')),
    { usage: /^unknown flag "dark_mode"; known flags: / },
  );
  for (const on of ['on', 'TRUE', '1', 'yes', 'enable', 'Enabled']) t.equal(onOff(on), true, on);
  for (const off of ['off', 'False', '0', 'no', 'disable', 'disabled']) t.equal(onOff(off), false, off);
  t.same(
    outcome(() => onOff('maybe')),
    { usage: 'value must be on or off, got "maybe"' },
  );
  t.equal(weightOption('2.5'), 2.5);
  for (const bad of ['0', '-1', 'x', ''])
    t.match(
      outcome(() => weightOption(bad)),
      { usage: /^weight must be a number above 0/ },
      JSON.stringify(bad),
    );
});

t.test('changelog list --limit takes digits only, as keys list --limit does', async (t) => {
  const control = await startTestControl(t);
  for (const bad of ['1e2', '0x10', '5.0']) {
    const run = await runCli(['changelog', 'list', '--limit', bad], { control });
    t.equal(run.code, EXIT_USAGE, `--limit ${bad}: exit 2`);
    t.match(run.stderr, '--limit must be an integer from 1 to 1000');
  }
  t.equal((await runCli(['changelog', 'list', '--limit', '5', '--json'], { control })).code, 0, '--limit 5 works');
});
