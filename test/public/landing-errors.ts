/**
 * What a person sees at the roots and on errors, over HTTP (in-process control): the landing
 * page at `{api_url}/` and its links, `{indexer_url}/` 302 to `/activity`, and every error on
 * both hosts as an HTML page for a browser (its `Accept` ranks `text/html` above JSON and
 * `*\/*`), with the status, the error code and a way back, under the pages' strict CSP;
 * programs (the SDK, `Accept: application/json`, `*\/*`) keep the 404 at `/` and problem+json,
 * unchanged. The User-Agent filter still comes first on the public API.
 */
import t, { type Test } from 'tap';
import { startTestControl, type AdminResponse, type TestControl } from '../fixtures/control';
import { CHROME_UA, SDK_UA, get } from '../fixtures/public';
import { forEachStore } from '../fixtures/stores';

/** What Chromium sends for a navigation. */
const NAVIGATE = 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8';
const browser = { 'user-agent': CHROME_UA, accept: NAVIGATE };

/** The strict CSP of every page: a nonce of its own, the one on the page's style. */
function checkCsp(t: Test, res: AdminResponse, what: string): void {
  const csp = res.headers.get('content-security-policy') ?? '';
  const nonce = /style-src 'nonce-([A-Za-z0-9+/=]{24})'/.exec(csp)?.[1];
  t.ok(nonce, `${what}: styles by nonce only`);
  t.match(csp, /default-src 'none'/, `${what}: nothing else loads`);
  t.notMatch(csp, /unsafe-inline|unsafe-eval/, `${what}: nothing unsafe`);
  t.equal([...res.text.matchAll(/nonce="([^"]+)"/g)].map((m) => m[1]).join(), nonce, `${what}: the page's one nonce is the CSP's`);
  t.notMatch(res.text, /<script|\sstyle="|\son[a-z]+=/i, `${what}: no script, no style attribute, no event handler`);
}

/** A browser's error page: HTML in the site's layout, the status, the code, a way back. */
function checkErrorPage(t: Test, control: TestControl, res: AdminResponse, status: number, code: string, what: string): void {
  t.equal(res.status, status, `${what}: ${status}`);
  t.equal(res.headers.get('content-type'), 'text/html; charset=utf-8', `${what}: an HTML page`);
  t.equal(res.headers.get('cache-control'), 'no-store', `${what}: not cached`);
  t.match(res.headers.get('vary'), /Accept/, `${what}: varies with Accept`);
  checkCsp(t, res, what);
  t.match(res.text, new RegExp(`<h1>${status} `), `${what}: the status as its heading`);
  t.match(res.text, `<code id="error-code">${code}</code>`, `${what}: the error code`);
  t.match(res.text, `<a href="${control.urls.api}/" id="back">`, `${what}: a way back to the home page`);
  t.match(res.text, /<nav aria-label="Site">/, `${what}: the site's header`);
}

/** A program's error: problem+json, as before. */
function checkProblem(t: Test, res: AdminResponse, status: number, code: string, what: string): void {
  t.equal(res.status, status, `${what}: ${status}`);
  t.equal(res.headers.get('content-type'), 'application/problem+json', `${what}: problem+json`);
  t.equal(res.body?.code, code, `${what}: ${code}`);
  t.equal(res.body?.status, status, `${what}: the status in the body`);
}

forEachStore(t, (t, kind) => {
  t.test('the landing page and the roots of both hosts', async (t) => {
    const control = await startTestControl(t, { store: kind });
    const { api, indexer } = control.urls;

    const home = await get(control, api, '/', browser);
    t.equal(home.status, 200, 'a browser gets the landing page');
    t.equal(home.headers.get('content-type'), 'text/html; charset=utf-8');
    t.equal(home.headers.get('vary'), 'Accept, Accept-Encoding', 'the answer at / depends on Accept');
    t.match(home.headers.get('cache-control'), /^public, max-age=\d+$/, 'cached like the other pages');
    checkCsp(t, home, '/');
    t.match(home.text, /API reliability gateway for AI agents/, 'says what svc is');
    for (const href of [
      `${api}/status`,
      `${api}/providers`,
      `${indexer}/activity`,
      `${api}/apply`,
      `${api}/openapi.json`,
      `${indexer}/changelog.atom`,
      `${indexer}/status.atom`,
    ])
      t.match(home.text, `<a href="${href}">`, `links to ${href}`);
    for (const path of ['/status', '/providers', '/apply', '/openapi.json'])
      t.equal((await get(control, api, path, browser)).status, 200, `${path}, linked from the landing page, answers 200`);
    for (const path of ['/activity', '/changelog.atom', '/status.atom', '/openapi.json'])
      t.equal((await get(control, indexer, path, browser)).status, 200, `${indexer}${path}, linked from the landing page, answers 200`);
    t.equal((await get(control, api, '/', { ...browser, 'if-none-match': home.headers.get('etag')! })).status, 304, '304 on a match');

    checkProblem(t, await get(control, api, '/'), 404, 'svc_not_found', 'the SDK at {api_url}/');
    checkProblem(
      t,
      await get(control, api, '/', { 'user-agent': CHROME_UA, accept: 'application/json' }),
      404,
      'svc_not_found',
      'Accept: application/json at {api_url}/',
    );
    checkProblem(
      t,
      await get(control, api, '/', { 'user-agent': CHROME_UA, accept: '*/*' }),
      404,
      'svc_not_found',
      'Accept: */* at {api_url}/',
    );
    t.equal(
      (await get(control, api, '/', { 'user-agent': 'curl/8.5.0', accept: NAVIGATE })).status,
      403,
      'the User-Agent filter comes first',
    );
    checkProblem(t, await get(control, api, '/', { 'user-agent': 'curl/8.5.0' }), 403, 'svc_forbidden_user_agent', 'curl at {api_url}/');

    const redirect = await fetch(`${indexer}/`, { headers: browser, redirect: 'manual' });
    t.equal(redirect.status, 302, '{indexer_url}/ redirects a browser');
    t.equal(redirect.headers.get('location'), '/activity', 'to the activity page');
    t.match(redirect.headers.get('vary'), /Accept/);
    checkProblem(t, await get(control, indexer, '/'), 404, 'svc_not_found', 'the SDK at {indexer_url}/');
    checkProblem(
      t,
      await get(control, indexer, '/', { accept: 'application/json' }),
      404,
      'svc_not_found',
      'Accept: application/json at {indexer_url}/',
    );
  });

  t.test('errors: a page for a browser, problem+json for programs, on both hosts', async (t) => {
    const control = await startTestControl(t, { store: kind });
    const { api, indexer } = control.urls;
    const json = { 'user-agent': SDK_UA, accept: 'application/json' };

    for (const [host, base] of [
      ['api', api],
      ['indexer', indexer],
    ] as const) {
      checkErrorPage(t, control, await get(control, base, '/no-such-page', browser), 404, 'svc_not_found', `${host} 404`);
      checkProblem(t, await get(control, base, '/no-such-page', json), 404, 'svc_not_found', `${host} 404, JSON`);
      checkProblem(t, await get(control, base, '/no-such-page', { 'user-agent': SDK_UA }), 404, 'svc_not_found', `${host} 404, the SDK`);
      checkProblem(
        t,
        await get(control, base, '/no-such-page', { 'user-agent': CHROME_UA, accept: 'text/html, application/json' }),
        404,
        'svc_not_found',
        `${host} 404, html tied with JSON`,
      );

      const page405 = await control.request(`${base}/favicon.ico`, { method: 'DELETE', headers: browser });
      checkErrorPage(t, control, page405, 405, 'svc_method_not_allowed', `${host} 405`);
      t.match(page405.headers.get('allow'), /GET/, `${host} 405: the page keeps Allow`);
      const json405 = await control.request(`${base}/favicon.ico`, { method: 'DELETE', headers: json });
      checkProblem(t, json405, 405, 'svc_method_not_allowed', `${host} 405, JSON`);
      t.match(json405.headers.get('allow'), /GET/);
    }

    const bad = await get(control, api, '/providers?sort=bogus', browser);
    checkErrorPage(t, control, bad, 400, 'svc_bad_request', 'api 400');
    t.match(bad.text, /sort/, 'api 400: says what was wrong');
    checkProblem(t, await get(control, api, '/providers?sort=bogus', json), 400, 'svc_bad_request', 'api 400, JSON');
    checkErrorPage(t, control, await get(control, indexer, '/api/receipts/01', browser), 400, 'svc_bad_request', 'indexer 400');
    checkProblem(t, await get(control, indexer, '/api/receipts/01', json), 400, 'svc_bad_request', 'indexer 400, JSON');

    const escaped = await get(control, api, '/%3Cb%3Ex%3C%2Fb%3E', browser);
    t.equal(escaped.status, 404);
    t.notMatch(escaped.text, /<b>x<\/b>/, 'what the request sent is escaped on the page');
  });
});
