/**
 * Internal errors carry a stable code (protocol/coded-error.ts): every error class of the product,
 * as the compiler finds them (test/fixtures/error-classes.ts), carries a code from a catalogue,
 * each CodedError its own; no product source makes a plain `Error` (parsed, with a negative case);
 * the catalogue and docs/design.md §9 list the same codes, logs print
 * the code, and callers that branch on a code (`hasCode`, `settlerHaltOf`, `startRole`) tell the
 * kinds apart.
 */
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import t from 'tap';
import { startRole } from '../../cli/commands/serve/lifecycle';
import { CliError } from '../../cli/exit-codes';
import { settlerHaltOf } from '../../control/context';
import { SettlerHaltedError } from '../../control/settler/settler';
import { SettlementConflictError, StoreOpenError } from '../../control/store/errors';
import { checkMarked, notPending } from '../../control/store/settlement-plan';
import { LedgerError } from '../../control/store/ledger';
import { StoreCopyError } from '../../control/store/pg/copy';
import { MissingReceiptError } from '../../control/store/receipts';
import { CodedError, INTERNAL_ERROR_CODES, InvariantError, hasCode } from '../../protocol/coded-error';
import { ERROR_CODES } from '../../protocol/errors';
import { createLogger } from '../../runtime/log';
import { PRODUCT_DIRS, errorClassesOf, plainErrorsIn, productErrorClasses, type ErrorClass } from '../fixtures/error-classes';
import { ROOT, sourceFiles } from '../fixtures/imports';
import { ERROR_CATALOGUE } from '../../sdk/src/codes';
import { AlreadyDone } from '../../control/mutation';
import { UpdateRejected } from '../../gateway/state/state';

const HALT = { batch: 3, batches_without_receipt: 1, reason: 'batch 3 is settled but has no receipt' };

/** Every code an error class may carry: the internal catalogue, the wire catalogue and the SDK's (which adds `svc_sdk_…`). */
const CATALOGUED = new Set<string>([...Object.keys(INTERNAL_ERROR_CODES), ...ERROR_CODES, ...Object.keys(ERROR_CATALOGUE)]);

/** What is wrong with each class (empty when nothing): a code from a catalogue, and a CodedError's own. */
function problemsOf(classes: readonly ErrorClass[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const c of classes) {
    const problems: string[] = [];
    if (c.codes === null) problems.push('has no `code` of string literals');
    else for (const code of c.codes) if (!CATALOGUED.has(code)) problems.push(`code ${code} is in no catalogue`);
    if (c.bases.includes('CodedError') && c.declared === null) {
      problems.push(c.ownCode ? 'declares its code without a literal value' : 'inherits its code instead of declaring its own');
    }
    out.set(`${c.file} ${c.name}`, problems);
  }
  return out;
}

t.test('every error class of the product carries a catalogued code, found by the compiler', async (t) => {
  const started = performance.now();
  const classes = productErrorClasses();
  t.comment(`${classes.length} error classes found in ${Math.round(performance.now() - started)} ms`);
  const names = new Set(classes.map((c) => `${c.file} ${c.name}`));
  for (const known of [
    'protocol/coded-error.ts CodedError',
    'protocol/errors.ts SvcError',
    'sdk/src/errors.ts SvcError',
    'cli/client.ts ApiError',
  ]) {
    t.ok(names.has(known), `found ${known}`);
  }
  for (const [name, problems] of problemsOf(classes)) t.same(problems, [], name);

  // One class per internal code, and one code per class: the catalogue has no orphan.
  const coded = classes.filter((c) => c.bases.includes('CodedError'));
  const owners = new Map<string, string[]>();
  for (const c of coded) if (c.declared !== null) owners.set(c.declared, [...(owners.get(c.declared) ?? []), c.name]);
  for (const code of Object.keys(INTERNAL_ERROR_CODES).filter((code) => code !== 'SVC_ERR')) {
    t.equal(owners.get(code)?.length, 1, `${code} belongs to exactly one class (${owners.get(code)?.join(', ') ?? 'none'})`);
  }
  t.same(
    [...owners.keys()].filter((code) => !(code in INTERNAL_ERROR_CODES)),
    [],
    'every CodedError code is in the internal catalogue',
  );
  t.equal(new CodedError('base').code, 'SVC_ERR');
  t.equal(new InvariantError('x').name, 'InvariantError', 'the name is the class’s');
});

t.test('the check finds an uncoded error class, however deep or private', async (t) => {
  const dir = t.testdir({
    'errors.ts': [
      `import { CodedError } from '${relative(t.testdirName, join(ROOT, 'protocol/coded-error'))}';`,
      'export class Plain extends Error {}',
      'class Deeper extends Plain {}',
      'export class Stringly extends Error { readonly code: string = "x"; }',
      'export class Foreign extends Error { readonly code = "SVC_ERR_NOPE"; }',
      'export class Inherits extends CodedError {}',
      'export class Coded extends CodedError { override readonly code = "SVC_ERR_CONFIG"; }',
      'export class Wire extends Error { readonly code = "svc_not_found"; }',
      'export class NotAnError { readonly code = "x"; }',
      'export const uses = [Deeper];',
    ].join('\n'),
  });
  const classes = errorClassesOf([join(ROOT, 'protocol/coded-error.ts'), join(dir, 'errors.ts')]).filter(
    (c) => c.file.endsWith('errors.ts') && !c.file.startsWith('protocol/'),
  );
  const problems = Object.fromEntries([...problemsOf(classes)].map(([name, p]) => [name.split(' ').pop(), p]));
  t.same(problems, {
    Plain: ['has no `code` of string literals'],
    Deeper: ['has no `code` of string literals'],
    Stringly: ['has no `code` of string literals'],
    Foreign: ['code SVC_ERR_NOPE is in no catalogue'],
    Inherits: ['inherits its code instead of declaring its own'],
    Coded: [],
    Wire: [],
  });
});

t.test('the product makes no plain Error: each error it throws or rejects with has a class and a code', async (t) => {
  const files = PRODUCT_DIRS.flatMap((d) => sourceFiles(join(ROOT, d)));
  t.ok(files.length > 100, `${files.length} product sources read`);
  const started = performance.now();
  t.same(plainErrorsIn(files), [], 'no `new Error(…)` or `Error(…)` in product code');
  t.comment(`${files.length} sources parsed in ${Math.round(performance.now() - started)} ms`);
});

t.test('the scan finds a plain Error however it is made, and nothing else', async (t) => {
  const dir = t.testdir({
    'plain.ts': [
      "export const a = () => { throw new Error('thrown'); };", // 1
      "export const b = Promise.reject(Error('called'));", // 2
      'export const c = new globalThis.Error(', // 3
      "  'split over lines',",
      ');',
      "export const d = (f: (e: Error) => void) => f(new Error('passed'));", // 6
      '// new Error( in a comment',
      "export const e = 'new Error( in a string';",
      'export class Mine extends Error {}',
      "export const f = new Mine('subclass');",
      "export const g = new RangeError('range');",
      'export const h = (err: unknown): err is Error => err instanceof Error;',
      "export const i = { Error: (m: string) => m }.Error('a property of another object');",
    ].join('\n'),
  });
  const found = plainErrorsIn([join(dir, 'plain.ts')]).map((at) => at.split(':').pop());
  t.same(found, ['1', '2', '3', '6']);
});

t.test('UpdateRejected and AlreadyDone carry their codes', async (t) => {
  const rejected = new UpdateRejected('bad delta');
  t.ok(hasCode(rejected, 'SVC_ERR_UPDATE_REJECTED') && rejected.name === 'UpdateRejected' && rejected.message === 'bad delta');
  const done = new AlreadyDone();
  t.ok(hasCode(done, 'SVC_ERR_ALREADY_DONE') && done.name === 'AlreadyDone');
});

t.test('docs/design.md §9 lists exactly the catalogue', async (t) => {
  const design = readFileSync(join(ROOT, 'docs/design.md'), 'utf8');
  const section = design.slice(design.indexOf('## 9. Errors'), design.indexOf('## 10.'));
  const listed = [...section.matchAll(/^\| `(SVC_ERR[A-Z_]*)` \|/gm)].map((m) => m[1]);
  t.same(listed.sort(), Object.keys(INTERNAL_ERROR_CODES).sort());
});

t.test('a log line carries the code', async (t) => {
  const lines: string[] = [];
  const log = createLogger({ sink: { write: (s: string) => lines.push(s) > 0 } });
  log.error('settlement failed', { err: new MissingReceiptError(7) });
  t.match(JSON.parse(lines[0]!), { msg: 'settlement failed', err: { name: 'MissingReceiptError', code: 'SVC_ERR_MISSING_RECEIPT' } });
});

t.test('callers tell the kinds apart by code', async (t) => {
  t.ok(hasCode(new StoreOpenError('x'), 'SVC_ERR_STORE_OPEN'));
  t.notOk(hasCode(new StoreCopyError('x'), 'SVC_ERR_STORE_OPEN'), 'another code');
  t.notOk(
    hasCode(Object.assign(new Error('x'), { code: 'SVC_ERR_STORE_OPEN' }), 'SVC_ERR_STORE_OPEN'),
    'a foreign error with the same code',
  );
  t.notOk(hasCode('SVC_ERR_STORE_OPEN', 'SVC_ERR_STORE_OPEN'), 'not an error');

  // A settlement batch whose calls another settler took meanwhile is a conflict, not a bug.
  t.ok(hasCode(notPending('c1'), 'SVC_ERR_SETTLEMENT_CONFLICT'), 'a planned exception no longer pending');
  t.throws(() => checkMarked(3, 2), new SettlementConflictError('settlement: batch of 3 calls marked 2'), 'fewer calls marked');
  t.doesNotThrow(() => checkMarked(3, 3));

  t.same(settlerHaltOf(new SettlerHaltedError(HALT)), HALT, 'the settler’s refusal carries its halt');
  t.equal(settlerHaltOf(new MissingReceiptError(3)), null, 'other errors are not a halt');

  // svcctl serve: a refusal named by code exits 1 with its message; anything else stays unexpected.
  const refused = await startRole(() => Promise.reject(new StoreOpenError('bad url')), 'SVC_ERR_CONTROL_START', 'SVC_ERR_STORE_OPEN').catch(
    (err: unknown) => err,
  );
  t.ok(refused instanceof CliError && refused.code === 'SVC_ERR_CLI' && refused.message === 'bad url', 'a refusal becomes a CliError');
  const other = new LedgerError('unbalanced', 'no');
  t.equal(
    await startRole(() => Promise.reject(other), 'SVC_ERR_STORE_OPEN').catch((err: unknown) => err),
    other,
    'another error passes through',
  );
});
