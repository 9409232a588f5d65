/**
 * svc-monitor-sdk carries generated copies of what `protocol/` owns (the error catalogue as
 * constants, the public read answers as plain types), so the published package needs neither
 * zod nor `protocol/`. This test fails when `protocol/` changed and
 * `node sdk/scripts/generate.js` was not run, and checks the built package's constants
 * against the catalogue itself.
 */
import t from 'tap';
import { join } from 'node:path';
import * as sdk from 'svc-monitor-sdk';
import { ERRORS, ERROR_CODES } from '../../protocol/errors';
import { OUTCOMES } from '../../protocol/outcome';

// eslint-disable-next-line @typescript-eslint/no-require-imports -- the generator is a plain CommonJS script, loaded by path
const generator = require(join(__dirname, '..', '..', 'sdk', 'scripts', 'generate.js')) as {
  drifted(): { file: string }[];
  renderErrors(catalogue: Record<string, { status: number; title: string }>): string;
  renderWire(): string;
  constantName(code: string): string;
};

t.test('sdk/src/generated/ is what the generator makes from protocol/ now', async (t) => {
  t.same(
    generator.drifted().map((d) => d.file),
    [],
    'no generated file is out of date (run node sdk/scripts/generate.js)',
  );
});

t.test('one exported constant per catalogue code, equal to the code', async (t) => {
  const exported = sdk as unknown as Record<string, unknown>;
  for (const code of ERROR_CODES) {
    t.equal(exported[generator.constantName(code)], code, `${generator.constantName(code)} = '${code}'`);
  }
  // The client's own codes (`SVC_SDK_…`, never sent by a server) are not the catalogue's.
  const constants = Object.keys(exported).filter((name) => /^SVC_(?!SDK_)[A-Z0-9_]+$/.test(name));
  t.equal(constants.length, ERROR_CODES.length, 'no constant for a code the catalogue does not have');
  t.equal(exported.SVC_SDK_HISTORY_REWRITTEN, 'svc_sdk_history_rewritten', 'the client-side code for a rewritten receipt history');
  t.same([...sdk.ERROR_CODES], [...ERROR_CODES], 'ERROR_CODES in catalogue order');
  for (const code of ERROR_CODES) {
    t.same(sdk.ERROR_CATALOGUE[code], { status: ERRORS[code].status, title: ERRORS[code].title }, `${code}: status and title`);
  }
});

t.test('the generated types carry protocol unions as they are', async (t) => {
  const wire = generator.renderWire();
  t.match(wire, `export type Outcome = ${OUTCOMES.map((o) => `'${o}'`).join(' | ')};`, 'Outcome lists every outcome in order');
  t.notMatch(wire, /from ['"]/, 'no import: the declarations stand alone');
  t.notMatch(wire, /\bz\.|zod/, 'nothing of zod');
});

t.test('the generator notices a catalogue change', async (t) => {
  const catalogue = Object.fromEntries(ERROR_CODES.map((c) => [c, { status: ERRORS[c].status, title: ERRORS[c].title }]));
  const now = generator.renderErrors(catalogue);
  const added = generator.renderErrors({ ...catalogue, svc_new_code: { status: 418, title: 'New' } });
  t.not(added, now);
  t.match(added, "export const SVC_NEW_CODE = 'svc_new_code';");
});
