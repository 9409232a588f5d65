/**
 * The README's "Your first refund" block, run as written (extracted from README.md, not
 * copied) with bash against a fresh `svcctl up --sample` on free ports: `SVC_DATA_DIR` points
 * svcctl at the stack's data dir, `GATEWAY` and `INDEXER` at its URLs. It must exit 0, show the
 * verdict headers, settle the failed call's refund into the key's balance and verify its proof.
 */
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { startUp } from '../fixtures/cli';
import { CLI_PATH, childEnv, controlListenArgs, testdirAfterTeardowns, WAIT_LIMIT_MS, waitFor } from '../fixtures/stack';

const ROOT = resolve(__dirname, '..', '..');
const HEADING = '## Your first refund, in a second terminal';

/** The first ```sh block after `heading` in README.md. */
function readmeBlock(readme: string, heading: string): string {
  const at = readme.indexOf(`\n${heading}\n`);
  if (at === -1) throw new Error(`README.md has no heading ${heading}`);
  const match = /\n```sh\n([\s\S]*?)\n```\n/.exec(readme.slice(at));
  if (match === null) throw new Error(`no sh block after ${heading}`);
  return match[1]!;
}

t.test('the README’s first-refund block runs as written', async (t) => {
  const block = readmeBlock(readFileSync(join(ROOT, 'README.md'), 'utf8'), HEADING);
  t.match(block, /svcctl receipts verify --call "\$CALL"/, 'the block is the story (sanity)');
  t.match(block, /svcctl accounts deposit "\$ACCOUNT"/, 'it deposits before it calls the prepaid sample');

  const dataDir = join(testdirAfterTeardowns(t), 'data');
  const up = startUp(t, ['--sample', '--data-dir', dataDir, ...controlListenArgs(), '--gateway-port', '0']);
  await waitFor(() => /Press Ctrl-C to stop\./.test(up.stdout()) || up.child.exitCode !== null, '`up --sample`', WAIT_LIMIT_MS * 2);
  const url = (label: string) => new RegExp(`^\\s*${label}\\s+(http://\\S+)`, 'm').exec(up.stdout())?.[1];
  const gateway = url('gateway \\(\\{market_url\\}\\)');
  const indexer = url('indexer \\(\\{indexer_url\\}\\)');
  t.ok(gateway && indexer, `URLs printed: ${up.stdout()}`);

  // bash -e: every command of the block must succeed; pipefail: so must every stage of a pipe.
  const run = spawnSync('bash', ['-e', '-o', 'pipefail', '-c', block], {
    cwd: ROOT,
    env: { ...childEnv(), SVC_DATA_DIR: dataDir, GATEWAY: gateway!, INDEXER: indexer! },
    encoding: 'utf8',
    timeout: WAIT_LIMIT_MS * 4,
  });
  t.equal(run.status, 0, `the block exits 0 (stderr: ${run.stderr})`);
  const out = run.stdout;
  t.match(out, /^x-svc-outcome: ok\r?$/im, 'the good call’s verdict headers');
  t.match(out, /^x-svc-call-id: [0-9a-f-]{36}\r?$/im);
  const call = /^failed call: ([0-9a-f-]{36})$/m.exec(out)?.[1];
  t.ok(call, 'the failing call’s id');
  t.match(out, /^Funded the pool with 10/m);
  t.match(out, new RegExp(`^Call ${call} verified: outcome server_error, refund 0\\.0011, premium 0, in settlement batch \\d+`, 'm'));
  t.match(out, /"code":"svc_payment_required"/, 'the first try, before the deposit, is refused');
  t.match(out, /"required":100,"available":0/, 'the refusal says what the call needs and what the gateway holds');
  t.match(out, /^Deposited 1 \(1000000 micro\) into acc_\w+ /m, 'the deposit');
  t.match(out, /^All 1 connected gateway\(s\) know of it\.$/m, 'and --wait saw the gateway take it');
  t.match(
    out,
    /^account:acc_\w+ +1\.001 +1001000$/m,
    'the deposit and the refund, less the good call’s premium, in the key’s account’s balance',
  );
});

t.test('the block’s commands are svcctl’s', async (t) => {
  const help = spawnSync(process.execPath, [CLI_PATH, 'receipts', 'verify', '--help'], { encoding: 'utf8', env: childEnv() });
  t.match(help.stdout, /--call <id>/, 'receipts verify takes --call');
});
