/**
 * The public application API and form handler on {api_url} (docs/design.md §8): 201 receipts, per-field
 * validation errors, the question-visibility rule enforced server-side, duplicates recognised
 * within the window, body size and content-type limits, and the per-address submit and
 * invalid-submission limits.
 */
import t from 'tap';
import { startTestControl, manualClock } from '../fixtures/control';
import { agentAnswers, BROWSER_UA, getPage, merchantAnswers, submitForm, submitJson } from '../fixtures/applications';
import { forEachStore } from '../fixtures/stores';

const ID = /^app_[1-9A-HJ-NP-Za-km-z]{12}$/;

forEachStore(t, (t, kind) => {
  t.test('a valid JSON application gets a 201 receipt and is stored as submitted', async (t) => {
    const control = await startTestControl(t, { store: kind });
    const res = await submitJson(control.urls.api, agentAnswers());
    t.equal(res.status, 201, res.text);
    t.match(res.headers.get('content-type'), /^application\/json/);
    t.same(Object.keys(res.body).sort(), ['answer_within_hours', 'id', 'status']);
    t.match(res.body.id, ID);
    t.equal(res.body.status, 'received');
    t.equal(res.body.answer_within_hours, 24);

    const shown = await control.admin('GET', `/_admin/v1/applications/${res.body.id}`);
    t.equal(shown.status, 200);
    t.match(shown.body, {
      id: res.body.id,
      source: 'api',
      status: 'pending',
      applicant_type: 'ai_agent',
      apis_paid: ['OpenAI', 'Exa'],
      why: null,
      feedback_opt_in: true,
      wallet: agentAnswers().wallet,
      submissions: 1,
      key_id: null,
      delivery: null,
      deliveries: [],
    });
    const audit = await control.admin('GET', '/_admin/v1/audit');
    t.ok(
      audit.body.entries.some((e: any) => e.action === 'applications.submit' && e.target === res.body.id && e.actor === 'public'),
      'the submission is in the audit log',
    );
  });

  t.test('validation errors list every field (400 svc_bad_request)', async (t) => {
    const control = await startTestControl(t, { store: kind });
    const api = control.urls.api;

    const empty = await submitJson(api, {});
    t.equal(empty.status, 400);
    t.match(empty.headers.get('content-type'), /^application\/problem\+json/);
    t.equal(empty.body.code, 'svc_bad_request');
    const fields = (body: any) => body.errors.map((e: { field: string }) => e.field).sort();
    t.same(
      fields(empty.body),
      ['applicant_type', 'building', 'contact_name', 'messaging_handle', 'social_url'],
      'each missing field is named',
    );

    const bad = await submitJson(
      api,
      agentAnswers({ wallet: '0x123', social_url: 'not a link', applicant_type: 'robot', feedback_opt_in: 'yes', extra: 1 }),
    );
    t.equal(bad.status, 400);
    t.same(fields(bad.body), ['applicant_type', 'extra', 'feedback_opt_in', 'social_url', 'wallet']);
    const message = (field: string) => bad.body.errors.find((e: any) => e.field === field).message;
    t.match(message('wallet'), /Solana/, 'the wallet error says what is allowed');
    t.match(message('applicant_type'), /ai_agent, api_merchant, ai_agent_merchant/);
    t.match(message('extra'), /not a known field/);

    const long = await submitJson(api, agentAnswers({ contact_name: 'x'.repeat(121), apis_paid: ['ok', ''.padEnd(101, 'y')] }));
    t.equal(long.status, 400);
    t.same(fields(long.body), ['apis_paid.1', 'contact_name']);

    const control1 = await submitJson(api, agentAnswers({ contact_name: 'Ada\u0000' }));
    t.equal(control1.status, 400, 'control characters are refused');

    const notJson = await fetch(`${api}/api/v1/applications`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'user-agent': 'svc-monitor-sdk/0.1.0' },
      body: '{"building":',
    });
    t.equal(notJson.status, 400);
    t.equal(((await notJson.json()) as any).code, 'svc_bad_request');

    const plain = await fetch(`${api}/api/v1/applications`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain', 'user-agent': 'svc-monitor-sdk/0.1.0' },
      body: 'hello',
    });
    t.equal(plain.status, 400, 'an unsupported content type is refused');

    const huge = await submitJson(api, agentAnswers({ building: 'x'.repeat(140_000) }));
    t.equal(huge.status, 413);
    t.equal(huge.body.code, 'svc_payload_too_large');

    t.same((await control.admin('GET', '/_admin/v1/applications')).body.applications, [], 'nothing was stored');

    // The longest answers in 4-byte characters, percent-encoded by a form, still fit.
    const wide = (n: number) => '\u{1F600}'.repeat(n);
    const biggest = new URLSearchParams({
      building: wide(2000),
      contact_name: wide(120),
      social_url: 'https://x.com/' + 'a'.repeat(280),
      messaging_handle: wide(200),
      applicant_type: 'ai_agent',
      apis_paid: Array.from({ length: 20 }, () => wide(100)).join('\n'),
    });
    const fits = await submitForm(api, '/api/v1/applications', biggest);
    t.equal(fits.status, 201, `the largest valid form (${biggest.toString().length} bytes) is accepted: ${fits.text.slice(0, 200)}`);
  });

  t.test('questions that are not asked are ignored; "why" is required when asked', async (t) => {
    const control = await startTestControl(t, { store: kind });
    const api = control.urls.api;
    const show = async (id: string) => (await control.admin('GET', `/_admin/v1/applications/${id}`)).body;

    // An API merchant: apis_paid is ignored, why is required.
    const noWhy = await submitJson(api, merchantAnswers({ why: '  ' }));
    t.equal(noWhy.status, 400);
    t.same(noWhy.body.errors, [{ field: 'why', message: 'is required for merchants' }]);
    const merchant = await submitJson(api, merchantAnswers({ apis_paid: ['Ignored API', 42] }));
    t.equal(merchant.status, 201, 'apis_paid (even malformed) does not matter for a merchant');
    t.same((await show(merchant.body.id)).apis_paid, [], 'and is not stored');

    // An AI agent that pays for no API yet must say why.
    const agentNoApis = await submitJson(api, agentAnswers({ apis_paid: [] }));
    t.equal(agentNoApis.status, 400);
    t.same(agentNoApis.body.errors, [{ field: 'why', message: 'is required for AI agents that do not pay for any API yet' }]);
    const agentWhy = await submitJson(api, agentAnswers({ apis_paid: [' '], why: 'Trying paid APIs soon.' }));
    t.equal(agentWhy.status, 201);
    t.match(await show(agentWhy.body.id), { apis_paid: [], why: 'Trying paid APIs soon.' });

    // An AI agent that pays for APIs is not asked why: an answer is dropped.
    const agent = await submitJson(api, agentAnswers({ why: 'Not asked', apis_paid: ['OpenAI', 'openai', ' Exa '] }));
    t.equal(agent.status, 201);
    t.match(await show(agent.body.id), { apis_paid: ['OpenAI', 'Exa'], why: null }, 'API names trimmed and de-duplicated');

    // An AI agent merchant: no apis, why required.
    const am = await submitJson(api, merchantAnswers({ applicant_type: 'ai_agent_merchant', apis_paid: ['X'] }));
    t.equal(am.status, 201);
    t.match(await show(am.body.id), { applicant_type: 'ai_agent_merchant', apis_paid: [] });

    // Wallet optional: empty and null mean none; a link without a scheme gets https://.
    const noWallet = await submitJson(api, agentAnswers({ wallet: '', social_url: 'github.com/ada-two', contact_name: 'Ada Two' }));
    t.equal(noWallet.status, 201, noWallet.text);
    t.match(await show(noWallet.body.id), { wallet: null, social_url: 'https://github.com/ada-two' });
    const evm = await submitJson(api, agentAnswers({ wallet: '0x52908400098527886E0F7030069857D2E4169EE7', contact_name: 'Ada Three' }));
    t.equal(evm.status, 201);
  });

  t.test('duplicates within the window are one application', async (t) => {
    const clock = manualClock();
    const control = await startTestControl(t, { store: kind, now: clock.now, flags: { 'applications.duplicateWindowS': 3600 } });
    const api = control.urls.api;

    const first = await submitJson(api, agentAnswers());
    t.equal(first.status, 201);
    clock.advance(60_000);
    // The same contact and content, differently typed.
    const again = await submitJson(
      api,
      agentAnswers({
        contact_name: '  ada   LOVELACE ',
        messaging_handle: 'Telegram  @ADA',
        social_url: 'http://www.github.com/ada/',
        apis_paid: ['exa', 'openai'],
        building: 'A research agent that summarises papers for   biotech teams.',
      }),
    );
    t.equal(again.status, 200, 'a duplicate answers 200');
    t.equal(again.body.id, first.body.id, 'with the same id');
    t.equal(again.body.status, 'received');

    const form = new URLSearchParams({
      building: 'A research agent that summarises papers for biotech teams.',
      contact_name: 'Ada Lovelace',
      wallet: agentAnswers().wallet as string,
      social_url: 'https://github.com/ada',
      messaging_handle: 'telegram @ada',
      applicant_type: 'ai_agent',
      apis_paid: 'OpenAI\r\nExa',
      feedback_opt_in: 'yes',
    });
    const viaForm = await submitForm(api, '/apply', form);
    t.equal(viaForm.status, 303, 'the form handler redirects for a duplicate too');
    t.equal(viaForm.headers.get('location'), `/apply/thanks?id=${first.body.id}`, 'to the same application');

    const list = (await control.admin('GET', '/_admin/v1/applications')).body.applications;
    t.equal(list.length, 1, 'one row');
    t.equal(list[0].submissions, 3, 'that counts three submissions');

    const other = await submitJson(api, agentAnswers({ building: 'Something else entirely.' }));
    t.equal(other.status, 201, 'different content is a new application');
    t.not(other.body.id, first.body.id);

    clock.advance(3600_000);
    const later = await submitJson(api, agentAnswers());
    t.equal(later.status, 201, 'after the window the same answers are a new application');
    t.not(later.body.id, first.body.id);
  });

  t.test('the form handler: 303 to the thank-you page, or the form again with errors and escaped values', async (t) => {
    const control = await startTestControl(t, { store: kind });
    const api = control.urls.api;

    const ok = await submitForm(
      api,
      '/apply',
      new URLSearchParams({
        building: 'An agent',
        contact_name: 'Lin',
        wallet: '',
        social_url: 'https://x.com/lin',
        messaging_handle: '@lin',
        applicant_type: 'api_merchant',
        apis_paid: 'Should be ignored',
        why: 'Curious',
      }),
    );
    t.equal(ok.status, 303);
    const location = ok.headers.get('location')!;
    t.match(location, /^\/apply\/thanks\?id=app_/);
    const id = new URL(location, api).searchParams.get('id')!;
    const stored = (await control.admin('GET', `/_admin/v1/applications/${id}`)).body;
    t.match(stored, {
      source: 'form',
      applicant_type: 'api_merchant',
      apis_paid: [],
      why: 'Curious',
      feedback_opt_in: false,
      wallet: null,
    });

    const thanks = await getPage(api, location);
    t.equal(thanks.status, 200);
    t.match(thanks.text, id, 'the thank-you page shows the reference');
    t.match(thanks.text, /24 hours/);
    const bogus = await getPage(api, '/apply/thanks?id=%3Cscript%3Ealert(1)%3C%2Fscript%3E');
    t.notMatch(bogus.text, /alert\(1\)/, 'an id that is not an application id is not echoed');

    const xss = '"><script>alert(1)</script>';
    const bad = await submitForm(
      api,
      '/apply',
      new URLSearchParams({
        building: '',
        contact_name: xss,
        social_url: 'nope',
        messaging_handle: '@x',
        applicant_type: 'ai_agent',
        feedback_opt_in: 'yes',
      }),
    );
    t.equal(bad.status, 400);
    t.match(bad.headers.get('content-type'), /^text\/html/);
    t.notOk(bad.text.includes('<script>alert(1)</script>'), 'the user’s value is never raw HTML');
    t.ok(bad.text.includes('value="&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"'), 'it is kept, escaped, in its field');
    t.match(bad.text, /id="f-building-error"[^>]*>[\s\S]*?is required/, 'the error sits with the building field');
    t.match(bad.text, /id="f-social_url-error"[^>]*>[\s\S]*?must be a link/);
    t.match(bad.text, /id="f-why-error"[^>]*>[\s\S]*?AI agents that do not pay/, 'why is required of an agent with no APIs');
    t.match(bad.text, /aria-invalid="true"/);
    t.match(
      bad.text,
      /<input type="checkbox" id="f-feedback_opt_in" name="feedback_opt_in" value="yes" checked/,
      'the checkbox stays ticked',
    );
    t.match(bad.text, /role="alert"/, 'an error summary is announced');
    t.equal((await control.admin('GET', '/_admin/v1/applications')).body.applications.length, 1, 'nothing more stored');
  });

  t.test('the form page: labels, strict CSP with a nonce, no external assets', async (t) => {
    const control = await startTestControl(t, { store: kind });
    const page = await getPage(control.urls.api, '/apply');
    t.equal(page.status, 200);
    t.match(page.headers.get('content-type'), /^text\/html; charset=utf-8/);
    const csp = page.headers.get('content-security-policy') ?? '';
    const nonce = /script-src 'nonce-([A-Za-z0-9+/=]+)'/.exec(csp)?.[1];
    t.ok(nonce, 'the CSP allows scripts by nonce only');
    t.match(csp, /default-src 'none'/);
    t.match(csp, /form-action 'self'/);
    t.match(csp, /frame-ancestors 'none'/);
    t.notMatch(csp, /unsafe-inline|unsafe-eval/);
    t.match(page.text, new RegExp(`<script nonce="${nonce!.replace(/[+/=]/g, '\\$&')}">`), 'the inline script carries the nonce');
    t.match(page.text, new RegExp(`<style nonce="${nonce!.replace(/[+/=]/g, '\\$&')}">`), 'so does the style');
    t.notMatch(
      page.text,
      /<script[^>]+src=|<link(?! rel="alternate" type="application\/atom\+xml")[^>]+href=|<img /,
      'no external assets (feed links load nothing)',
    );
    t.equal(page.headers.get('x-content-type-options'), 'nosniff');
    for (const name of ['building', 'contact_name', 'wallet', 'social_url', 'messaging_handle', 'apis_paid', 'why', 'feedback_opt_in']) {
      t.match(page.text, new RegExp(`<label for="f-${name}">`), `${name} has a label`);
      t.match(page.text, new RegExp(`id="f-${name}" name="${name}"`), `${name} has its input`);
    }
    t.match(page.text, /<legend>You are <span class="req">\(required\)<\/span><\/legend>/, 'the applicant type is a labelled group');
    t.match(page.text, /Only for AI agents/, 'without JavaScript the APIs question says whom it is for');
    t.match(page.text, /can be added later/, 'the wallet is optional and can be added later');
    t.match(page.text, /special offers/, 'the feedback opt-in explains the early-tester offers');
    const second = await getPage(control.urls.api, '/apply');
    t.not(/nonce-([^']+)'/.exec(second.headers.get('content-security-policy') ?? '')?.[1], nonce, 'a fresh nonce per response');
  });

  t.test('submissions are limited per address (429 svc_rate_limited + Retry-After)', async (t) => {
    const clock = manualClock();
    const control = await startTestControl(t, {
      store: kind,
      now: clock.now,
      flags: { 'applications.submitLimitCount': 3, 'applications.submitLimitWindowS': 600 },
    });
    const api = control.urls.api;
    t.equal((await submitJson(api, agentAnswers())).status, 201);
    t.equal((await submitJson(api, {})).status, 400, 'an invalid attempt is answered 400…');
    t.equal((await submitJson(api, merchantAnswers())).status, 201);
    t.equal((await submitJson(api, merchantAnswers({ contact_name: 'Third' }))).status, 201, '…and did not use up the submit limit');
    clock.advance(100_000);
    const limited = await submitJson(api, agentAnswers({ contact_name: 'Someone Else' }));
    t.equal(limited.status, 429);
    t.equal(limited.body.code, 'svc_rate_limited');
    t.equal(limited.headers.get('retry-after'), '500', 'Retry-After counts down to the end of the window');
    t.equal(limited.headers.get('ratelimit-policy'), '"applications";q=3;w=600', 'RateLimit-Policy names the submit limit');
    t.equal(limited.headers.get('ratelimit'), '"applications";r=0;t=500', 'RateLimit: nothing left until the window ends');
    const form = await submitForm(api, '/apply', new URLSearchParams({ contact_name: 'x' }));
    t.equal(form.status, 429, 'the form handler shares the limit');
    t.equal(form.headers.get('retry-after'), '500');
    t.equal(form.headers.get('ratelimit-policy'), '"applications";q=3;w=600', 'the form answer carries the rate-limit headers too');
    t.match(form.text, /Too many applications/);
    t.match(form.text, /value="x"/, 'the refused form keeps what was typed');
    clock.advance(500_000);
    t.equal((await submitJson(api, agentAnswers({ contact_name: 'Someone Else' }))).status, 201, 'a new window admits again');
  });

  t.test('behind public.trustedProxyHops proxies each applicant has its own limit', async (t) => {
    const from = (xff: string) => ({ 'x-forwarded-for': xff });
    const behind = await startTestControl(t, { store: kind, flags: { 'applications.submitLimitCount': 1, 'public.trustedProxyHops': 1 } });
    t.equal((await submitJson(behind.urls.api, agentAnswers(), from('198.51.100.1'))).status, 201);
    t.equal(
      (await submitJson(behind.urls.api, merchantAnswers(), from('198.51.100.2'))).status,
      201,
      'another address behind the same proxy: its own limit',
    );
    t.equal(
      (await submitJson(behind.urls.api, merchantAnswers({ contact_name: 'Third' }), from('198.51.100.1'))).status,
      429,
      'the first address has used its limit',
    );
    t.equal(
      (await submitJson(behind.urls.api, merchantAnswers({ contact_name: 'Fourth' }), from('203.0.113.5, 198.51.100.1'))).status,
      429,
      "an entry the caller wrote left of the proxy's changes nothing",
    );

    const direct = await startTestControl(t, { store: kind, flags: { 'applications.submitLimitCount': 1 } });
    t.equal((await submitJson(direct.urls.api, agentAnswers(), from('198.51.100.1'))).status, 201);
    t.equal(
      (await submitJson(direct.urls.api, merchantAnswers(), from('198.51.100.2'))).status,
      429,
      'no trusted proxy: X-Forwarded-For buys no fresh limit',
    );
  });

  t.test('invalid submissions count under their own, looser limit', async (t) => {
    const clock = manualClock();
    const control = await startTestControl(t, {
      store: kind,
      now: clock.now,
      flags: { 'applications.submitLimitCount': 2, 'applications.invalidLimitCount': 5, 'applications.submitLimitWindowS': 600 },
    });
    const api = control.urls.api;

    // Mistakes of every kind: missing fields, a bad wallet, a control character, a body that is not JSON.
    t.equal((await submitJson(api, {})).status, 400);
    t.equal((await submitJson(api, agentAnswers({ wallet: '0x123' }))).status, 400);
    t.equal((await submitJson(api, agentAnswers({ contact_name: 'Ada\u001b[2J' }))).status, 400);
    const notJson = await fetch(`${api}/api/v1/applications`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'user-agent': BROWSER_UA },
      body: '{"building":',
    });
    t.equal(notJson.status, 400, 'a body that is not JSON is an invalid submission too');
    await notJson.arrayBuffer();

    // Four mistakes against a submit limit of 2: the corrected answers still go through, twice.
    const fixed = await submitJson(api, agentAnswers());
    t.equal(fixed.status, 201, `the corrected application is received after four invalid ones (${fixed.text})`);
    t.equal((await submitJson(api, merchantAnswers())).status, 201, 'and so is a second one: the submit limit is intact');
    const third = await submitJson(api, merchantAnswers({ contact_name: 'Third' }));
    t.equal(third.status, 429, 'the submit limit itself still holds');

    // A fresh window: the invalid limit ends with 429 + Retry-After, and then nothing is read.
    clock.advance(600_000);
    for (let i = 1; i <= 5; i++) t.equal((await submitJson(api, {})).status, 400, `invalid submission ${i} of 5: 400`);
    clock.advance(60_000);
    const limited = await submitJson(api, {});
    t.equal(limited.status, 429, 'the sixth invalid submission: 429');
    t.equal(limited.body.code, 'svc_rate_limited');
    t.equal(limited.headers.get('retry-after'), '540', 'Retry-After counts down to the end of the window');
    t.equal(limited.headers.get('ratelimit-policy'), '"applications-invalid";q=5;w=600', 'RateLimit-Policy names the invalid limit');
    t.equal(limited.headers.get('ratelimit'), '"applications-invalid";r=0;t=540');
    t.equal(
      (await submitJson(api, agentAnswers({ contact_name: 'Someone' }))).status,
      429,
      'an address past the invalid limit is refused until the window ends',
    );
    const form = await submitForm(api, '/apply', new URLSearchParams({ contact_name: 'x' }));
    t.equal(form.status, 429, 'the form handler shares the limit');
    clock.advance(540_000);
    t.equal((await submitJson(api, agentAnswers({ contact_name: 'Someone' }))).status, 201, 'a new window admits again');
  });

  t.test('the form handler counts invalid answers under the invalid limit too', async (t) => {
    const clock = manualClock();
    const control = await startTestControl(t, {
      store: kind,
      now: clock.now,
      flags: { 'applications.submitLimitCount': 1, 'applications.invalidLimitCount': 3, 'applications.submitLimitWindowS': 600 },
    });
    const api = control.urls.api;
    for (let i = 1; i <= 2; i++) {
      const bad = await submitForm(api, '/apply', new URLSearchParams({ contact_name: 'x' }));
      t.equal(bad.status, 400, `invalid form ${i}: 400 with the form again`);
    }
    const good = await submitForm(
      api,
      '/apply',
      new URLSearchParams(agentAnswers({ apis_paid: 'OpenAI', feedback_opt_in: 'on' }) as Record<string, string>),
    );
    t.equal(good.status, 303, `the corrected form is received (${good.status})`);
    const bad = await submitForm(api, '/apply', new URLSearchParams({ contact_name: 'x' }));
    t.equal(bad.status, 429, 'with the submit limit (1) used, the next attempt is 429');
  });
});
