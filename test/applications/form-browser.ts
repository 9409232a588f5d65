/**
 * The application form in headless Chromium (playwright-core driving /usr/bin/chromium): the
 * APIs question appears for AI agents only and "why" follows the visibility rule; invalid
 * input comes back with errors next to the fields and the values kept; a valid submission
 * lands on the thank-you page and `svcctl applications list --json` shows it. Without
 * JavaScript every question is shown with whom it is for, and the server ignores the rest.
 * Skips only where /usr/bin/chromium is absent.
 */
import t, { type Test } from 'tap';
import type { BrowserContext, Page } from 'playwright-core';
import { runCli } from '../fixtures/cli';
import { startTestControl } from '../fixtures/control';
import { BROWSER_UA, SOLANA_WALLET } from '../fixtures/applications';
import { openContext, skipWithoutChromium } from '../fixtures/browser';

async function launch(t: Test, javaScriptEnabled: boolean): Promise<{ context: BrowserContext; page: Page; problems: string[] }> {
  const context = await openContext(t, { javaScriptEnabled, userAgent: BROWSER_UA });
  const page = await context.newPage();
  page.setDefaultTimeout(10_000);
  const problems: string[] = [];
  page.on('console', (msg) => {
    // The 400 of the deliberately invalid submission is expected; anything else is not.
    if (msg.type() === 'error' && !/status of 400/.test(msg.text())) problems.push(msg.text());
  });
  page.on('pageerror', (err) => problems.push(err.message));
  return { context, page, problems };
}

const visible = (page: Page, selector: string) => page.isVisible(selector);

if (!skipWithoutChromium(t, 'the application form')) {
  t.test('with JavaScript: questions follow the applicant type; errors, then a valid submission', async (t) => {
    const control = await startTestControl(t);
    const { page, problems } = await launch(t, true);
    const res = await page.goto(`${control.urls.api}/apply`);
    t.equal(res?.status(), 200);
    t.equal(await page.title(), 'Apply for svc beta access');
    t.ok(
      await page.evaluate(() => (globalThis as any).document.documentElement.classList.contains('js') as boolean),
      'the inline script ran under the CSP',
    );

    t.notOk(await visible(page, '#f-apis_paid'), 'no type chosen: the APIs question is hidden');
    t.notOk(await visible(page, '#f-why'), 'and so is why');
    t.notOk(await visible(page, '#f-apis_paid-for'), 'the "only for" note is for browsers without JavaScript');

    await page.check('#f-applicant_type-ai_agent');
    t.ok(await visible(page, '#f-apis_paid'), 'AI agent: the APIs question is shown');
    t.ok(await visible(page, '#f-why'), 'an agent that pays for no API yet is asked why');
    await page.fill('#f-apis_paid', 'OpenAI\nExa');
    t.notOk(await visible(page, '#f-why'), 'once it lists APIs, why is not asked');

    await page.check('#f-applicant_type-api_merchant');
    t.notOk(await visible(page, '#f-apis_paid'), 'API merchant: the APIs question is hidden');
    t.ok(await visible(page, '#f-why'), 'merchants are asked why');
    await page.check('#f-applicant_type-ai_agent_merchant');
    t.notOk(await visible(page, '#f-apis_paid'), 'AI agent merchant: hidden too');
    t.ok(await visible(page, '#f-why'));

    // Invalid: no building, a bad link, a bad wallet, an agent without APIs and without why.
    await page.check('#f-applicant_type-ai_agent');
    await page.fill('#f-apis_paid', '');
    await page.fill('#f-contact_name', '<b>Ada</b> "Lovelace"');
    await page.fill('#f-social_url', 'not a link');
    await page.fill('#f-wallet', '0x1234');
    await page.fill('#f-messaging_handle', 'telegram @ada');
    await page.check('#f-feedback_opt_in');
    for (const name of ['building', 'contact_name', 'social_url', 'messaging_handle'])
      t.match(await page.textContent(`label[for="f-${name}"]`), /\(required\)$/, `${name}: marked required before anything is sent`);
    t.match(await page.textContent('#f-applicant_type legend'), /\(required\)$/);
    t.notMatch(await page.textContent('label[for="f-wallet"]'), /\(required\)/, 'the optional wallet is not');
    t.ok(await visible(page, 'label[for="f-why"] .req'), 'why, when asked, is marked required');
    t.equal(await page.getAttribute('#f-why', 'required'), '', 'and required of the browser');
    const url = page.url();
    await page.click('button[type=submit]');
    t.equal(page.url(), url, 'the browser’s own validation keeps an empty required field from being sent');
    t.equal(
      await page.locator('#f-building').evaluate((el) => (el as unknown as { validity: { valueMissing: boolean } }).validity.valueMissing),
      true,
      'building is missing, says the browser',
    );
    // The server checks as well: a browser that does not validate gets the same errors.
    await page.locator('#apply-form').evaluate((f) => ((f as unknown as { noValidate: boolean }).noValidate = true));
    // eslint-disable-next-line @typescript-eslint/no-deprecated -- the wait starts before the click, and the test needs the navigation's response, which waitForURL does not give
    const [invalid] = await Promise.all([page.waitForNavigation(), page.click('button[type=submit]')]);
    t.equal(invalid?.status(), 400);
    t.match(await page.title(), /^Error: /);
    t.match(
      await page.textContent('#f-building-error'),
      /What you are building is required/,
      'the error is next to its field, as a sentence',
    );
    t.match(
      await page.textContent('#error-summary'),
      /Why you want to try svc is required for AI agents/,
      'the summary reads as sentences',
    );
    t.notMatch(await page.textContent('#error-summary'), /\?: is required/);
    t.match(await page.textContent('#f-social_url-error'), /must be a link/);
    t.match(await page.textContent('#f-wallet-error'), /Solana/);
    t.match(await page.textContent('#f-why-error'), /AI agents that do not pay for any API yet/);
    t.equal(await page.getAttribute('#f-social_url', 'aria-invalid'), 'true');
    t.match(await page.getAttribute('#f-building', 'aria-describedby'), /f-building-error/, 'errors are announced with their field');
    t.equal(await page.inputValue('#f-contact_name'), '<b>Ada</b> "Lovelace"', 'values are kept exactly');
    t.equal(await page.inputValue('#f-messaging_handle'), 'telegram @ada');
    t.ok(await page.isChecked('#f-applicant_type-ai_agent'), 'the chosen type is kept');
    t.ok(await page.isChecked('#f-feedback_opt_in'));
    t.equal(await page.locator('b').count(), 0, 'the user’s markup is not rendered');
    t.ok(await visible(page, '#error-summary'), 'a summary lists the problems');
    t.equal(
      await page.evaluate(() => (globalThis as any).document.activeElement?.id as string | undefined),
      'error-summary',
      'and takes the focus',
    );
    t.ok(await visible(page, '#f-why'), 'the re-rendered form applies the rule again');

    // Fix everything and send.
    await page.fill('#f-building', 'A research agent that summarises papers.');
    await page.fill('#f-contact_name', 'Ada Lovelace');
    await page.fill('#f-social_url', 'github.com/ada');
    await page.fill('#f-wallet', SOLANA_WALLET);
    await page.fill('#f-apis_paid', 'OpenAI\nExa');
    t.notOk(await visible(page, '#f-why'));
    // eslint-disable-next-line @typescript-eslint/no-deprecated -- the wait starts before the click, and the test needs the navigation's response, which waitForURL does not give
    const [done] = await Promise.all([page.waitForNavigation(), page.click('button[type=submit]')]);
    t.equal(done?.status(), 200);
    t.match(page.url(), /\/apply\/thanks\?id=app_/, 'redirected to the thank-you page');
    const id = (await page.textContent('#application-id'))!;
    t.match(id, /^app_/);
    t.match(await page.textContent('main'), /within 24 hours/);
    t.same(problems, [], 'no console errors or CSP violations');

    const list = await runCli(['applications', 'list', '--json'], { control });
    t.equal(list.code, 0, list.stderr);
    const apps = list.json().applications;
    t.equal(apps.length, 1, 'the submission landed');
    t.match(apps[0], {
      id,
      source: 'form',
      applicant_type: 'ai_agent',
      contact_name: 'Ada Lovelace',
      social_url: 'https://github.com/ada',
      wallet: SOLANA_WALLET,
      apis_paid: ['OpenAI', 'Exa'],
      why: null,
      feedback_opt_in: true,
    });
  });

  t.test('without JavaScript: every question shown with whom it is for; the server ignores the rest', async (t) => {
    const control = await startTestControl(t);
    const { page } = await launch(t, false);
    await page.goto(`${control.urls.api}/apply`);
    t.ok(await visible(page, '#f-apis_paid'), 'the APIs question is shown');
    t.match(await page.textContent('#f-apis_paid-for'), /Only for AI agents/);
    t.ok(await visible(page, '#f-apis_paid-for'), 'with its note');
    t.ok(await visible(page, '#f-why'));
    t.ok(await visible(page, '#f-why-for'));

    await page.fill('#f-building', 'A weather API sold per call.');
    await page.fill('#f-contact_name', 'Grace Hopper');
    await page.fill('#f-social_url', 'https://x.com/weatherco');
    await page.fill('#f-messaging_handle', 'grace@weather.example');
    await page.check('#f-applicant_type-api_merchant');
    await page.fill('#f-apis_paid', 'Should be ignored');
    await page.fill('#f-why', 'Agents should trust our uptime.');
    // eslint-disable-next-line @typescript-eslint/no-deprecated -- the wait starts before the click, and the test needs the navigation's response, which waitForURL does not give
    const [done] = await Promise.all([page.waitForNavigation(), page.click('button[type=submit]')]);
    t.equal(done?.status(), 200);
    t.match(page.url(), /\/apply\/thanks\?id=app_/);
    const apps = (await runCli(['applications', 'list', '--json'], { control })).json().applications;
    t.equal(apps.length, 1);
    t.match(apps[0], { applicant_type: 'api_merchant', apis_paid: [], why: 'Agents should trust our uptime.', feedback_opt_in: false });
  });
}
