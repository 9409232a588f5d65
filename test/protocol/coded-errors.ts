/**
 * Internal errors carry a stable code (protocol/coded-error.ts): every class has its own, the
 * catalogue and docs/design.md §9 list the same codes, logs print the code, and callers that
 * branch on a code (`hasCode`, `settlerHaltOf`, `startRole`) tell the kinds apart.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { ApiError } from '../../cli/client';
import { startRole } from '../../cli/commands/serve/lifecycle';
import { CliError, UsageError } from '../../cli/exit-codes';
import { ConfigError } from '../../config/load';
import { settlerHaltOf } from '../../control/context';
import { ControlStartError } from '../../control/server';
import { SettlerHaltedError } from '../../control/settler/settler';
import { StoreOpenError } from '../../control/store/errors';
import { LedgerError } from '../../control/store/ledger-core';
import { StoreCopyError } from '../../control/store/pg/copy';
import { MissingReceiptError, ReissueError } from '../../control/store/receipts-core';
import { TokenConflictError } from '../../control/tokens';
import { GatewayStartError } from '../../gateway/main';
import { CodedError, INTERNAL_ERROR_CODES, hasCode, type InternalErrorCode } from '../../protocol/coded-error';
import { InstanceLockedError } from '../../runtime/instance-lock';
import { createLogger } from '../../runtime/log';
import {
  SyncPostAnswerError,
  SyncPostClosedError,
  SyncPostQueueFullError,
  SyncPostTimeoutError,
} from '../../gateway/control-link/sync-post';
import { ROOT } from '../fixtures/imports';

const HALT = { batch: 3, batches_without_receipt: 1, reason: 'batch 3 is settled but has no receipt' };

/** One instance of every class, with the code and name it must have. */
const INSTANCES: [CodedError, InternalErrorCode, string][] = [
  [new ConfigError([{ key: 'api.port', source: 'env', value: 'x', allowed: 'a port' }]), 'SVC_ERR_CONFIG', 'ConfigError'],
  [new InstanceLockedError(42), 'SVC_ERR_INSTANCE_LOCKED', 'InstanceLockedError'],
  [new ControlStartError('no'), 'SVC_ERR_CONTROL_START', 'ControlStartError'],
  [new GatewayStartError('no'), 'SVC_ERR_GATEWAY_START', 'GatewayStartError'],
  [new TokenConflictError('no'), 'SVC_ERR_TOKEN_CONFLICT', 'TokenConflictError'],
  [new StoreOpenError('no'), 'SVC_ERR_STORE_OPEN', 'StoreOpenError'],
  [new StoreCopyError('no'), 'SVC_ERR_STORE_COPY', 'StoreCopyError'],
  [new LedgerError('unbalanced', 'no'), 'SVC_ERR_LEDGER', 'LedgerError'],
  [new MissingReceiptError(3), 'SVC_ERR_MISSING_RECEIPT', 'MissingReceiptError'],
  [new ReissueError('no_batch', 'no'), 'SVC_ERR_REISSUE', 'ReissueError'],
  [new SettlerHaltedError(HALT), 'SVC_ERR_SETTLER_HALTED', 'SettlerHaltedError'],
  [new SyncPostTimeoutError(6_000), 'SVC_ERR_SYNC_POST_TIMEOUT', 'SyncPostTimeoutError'],
  [new SyncPostQueueFullError(64), 'SVC_ERR_SYNC_POST_QUEUE_FULL', 'SyncPostQueueFullError'],
  [new SyncPostAnswerError('no'), 'SVC_ERR_SYNC_POST_ANSWER', 'SyncPostAnswerError'],
  [new SyncPostClosedError(), 'SVC_ERR_SYNC_POST_CLOSED', 'SyncPostClosedError'],
  [new UsageError('no'), 'SVC_ERR_USAGE', 'UsageError'],
  [new CliError('no'), 'SVC_ERR_CLI', 'CliError'],
  [
    new ApiError({ type: 'about:blank', title: 'Not Found', status: 404, detail: 'no such key', code: 'svc_not_found' }),
    'SVC_ERR_CLI_API',
    'ApiError',
  ],
];

t.test('each internal error class has its own stable code and its name', async (t) => {
  for (const [err, code, name] of INSTANCES) {
    t.ok(err instanceof CodedError, `${name} is a CodedError`);
    t.equal(err.code, code, `${name}.code`);
    t.equal(err.name, name, `${name}.name`);
  }
  t.same(
    INSTANCES.map(([, code]) => code).sort(),
    Object.keys(INTERNAL_ERROR_CODES)
      .filter((c) => c !== 'SVC_ERR')
      .sort(),
    'the catalogue has exactly the classes’ codes (and the base)',
  );
  t.equal(new CodedError('base').code, 'SVC_ERR');
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
