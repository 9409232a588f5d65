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
  const constants = Object.keys(exported).filter((name) => /^SVC_[A-Z0-9_]+$/.test(name) && !name.startsWith('SVC_SDK_'));
  t.equal(constants.length, ERROR_CODES.length, 'no constant for a code the catalogue does not have');
  t.same([...sdk.SERVICE_ERROR_CODES], [...ERROR_CODES], 'SERVICE_ERROR_CODES in catalogue order');
  t.equal(exported.SVC_SDK_HISTORY_REWRITTEN, 'svc_sdk_history_rewritten', 'the client-side code for a rewritten receipt history');
  for (const code of ERROR_CODES) {
    t.same(sdk.ERROR_CATALOGUE[code], { status: ERRORS[code].status, title: ERRORS[code].title }, `${code}: status and title`);
  }
  t.same([...sdk.ERROR_CODES], [...ERROR_CODES, ...sdk.SDK_ERROR_CODES], "ERROR_CODES: the service's, then the SDK's own");
  for (const code of sdk.SDK_ERROR_CODES) {
    t.match(code, /^svc_sdk_[a-z_]+$/, `${code}: in the SDK's namespace`);
    t.equal(exported[generator.constantName(code)], code, `${generator.constantName(code)} = '${code}'`);
    t.equal(sdk.ERROR_CATALOGUE[code].status, 0, `${code}: status 0, raised by the SDK`);
  }
});

t.test("the generated outcome list and call id pattern are protocol's", async (t) => {
  t.same([...sdk.OUTCOMES], [...OUTCOMES], 'OUTCOMES');
  t.ok(sdk.isCallId('01890a5d-ac96-774b-bcce-b302099a8057'), 'a UUIDv7 is a call id');
  t.notOk(sdk.isCallId('01890a5d-ac96-474b-bcce-b302099a8057'), 'a UUIDv4 is not');
  t.notOk(sdk.isCallId('not-a-call-id'));
});

t.test('a service code in the SDK namespace is refused by the generator', async (t) => {
  t.throws(() => generator.renderErrors({ svc_sdk_timeout: { status: 504, title: 'Clash' } }), /svc_sdk_/);
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
