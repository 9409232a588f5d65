/**
 * Logs are JSON lines, and a key that reaches a log call by mistake is cut to its stub in the
 * message, in nested fields, in arrays, in errors and in child-logger bindings.
 */
import t from 'tap';
import { generateKey, keyStub } from '../../protocol/keys';
import { createLogger } from '../../runtime/log';

function sinkLogger(level?: 'debug' | 'info' | 'warn' | 'error') {
  const lines: string[] = [];
  const log = createLogger({
    ...(level ? { level } : {}),
    sink: { write: (line: string) => lines.push(line) },
    clock: () => new Date(Date.UTC(2030, 0, 1)),
  });
  return { log, lines };
}

t.test('one JSON object per line with time, level and message', async (t) => {
  const { log, lines } = sinkLogger();
  log.info('hello', { n: 1 });
  t.equal(lines.length, 1);
  t.ok(lines[0]!.endsWith('\n'), 'newline-terminated');
  t.same(JSON.parse(lines[0]!), { time: '2030-01-01T00:00:00.000Z', level: 'info', msg: 'hello', n: 1 });
});

t.test('levels below the threshold are dropped', async (t) => {
  const { log, lines } = sinkLogger('warn');
  log.debug('d');
  log.info('i');
  log.warn('w');
  log.error('e');
  t.same(
    lines.map((l) => JSON.parse(l).level),
    ['warn', 'error'],
  );
});

t.test('keys are redacted everywhere in a record', async (t) => {
  const { log, lines } = sinkLogger('debug');
  const key = generateKey();
  const stub = keyStub(key);
  const err = new Error(`rejected ${key}`);
  log.child({ caller: key }).warn(`got ${key}`, {
    header: `Bearer ${key}`,
    nested: { deeper: { list: [key, `x${key}`] } },
    err,
  });
  t.equal(lines.length, 1);
  const line = lines[0]!;
  t.notOk(line.includes(key), 'the plaintext appears nowhere in the line');
  t.notOk(line.includes(key.slice(stub.length)), 'nor does the secret part of it');
  const record = JSON.parse(line);
  t.equal(record.msg, `got ${stub}…`);
  t.equal(record.header, `Bearer ${stub}…`);
  t.same(record.nested.deeper.list, [`${stub}…`, `x${stub}…`]);
  t.equal(record.err.message, `rejected ${stub}…`);
  t.equal(record.caller, `${stub}…`);
});
