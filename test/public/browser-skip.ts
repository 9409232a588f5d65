/**
 * The browser tests skip only where Chromium is absent and CI is not running: without it they
 * plan nothing and say how to install it; under `CI=true` they fail instead, so CI never passes
 * by skipping the pages (test/fixtures/browser.ts).
 */
import t, { type Test } from 'tap';
import { CHROMIUM_ENV, hasChromium, skipWithoutChromium } from '../fixtures/browser';

/** A test double that records `plan(0, reason)`. */
function planned(): { t: Test; plans: [number, string?][] } {
  const plans: [number, string?][] = [];
  return { t: { plan: (n: number, reason?: string) => plans.push([n, reason]) } as unknown as Test, plans };
}

t.test('without Chromium: skipped with how to install it, or a failure under CI=true', async (t) => {
  const saved = { path: process.env[CHROMIUM_ENV], ci: process.env.CI };
  t.teardown(() => {
    for (const [name, value] of [
      [CHROMIUM_ENV, saved.path],
      ['CI', saved.ci],
    ] as const)
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
  });
  process.env[CHROMIUM_ENV] = '/nonexistent/chromium';
  t.equal(hasChromium(), false);

  delete process.env.CI;
  const skipped = planned();
  t.equal(skipWithoutChromium(skipped.t, 'the pages'), true, 'skipped');
  t.same(skipped.plans, [
    [0, '/nonexistent/chromium is absent: install it with `apt-get install -y chromium` to run the pages in a browser'],
  ]);

  process.env.CI = 'true';
  const failing = planned();
  t.throws(() => skipWithoutChromium(failing.t, 'the pages'), /CI=true and Chromium is unavailable/, 'CI=true: a failure, not a skip');
  t.same(failing.plans, [], 'nothing planned');
});

t.test('with Chromium: nothing skipped', async (t) => {
  const saved = process.env[CHROMIUM_ENV];
  t.teardown(() => (saved === undefined ? delete process.env[CHROMIUM_ENV] : (process.env[CHROMIUM_ENV] = saved)));
  process.env[CHROMIUM_ENV] = process.execPath; // any file that exists stands in for the binary
  const run = planned();
  t.equal(skipWithoutChromium(run.t, 'the pages'), false);
  t.same(run.plans, []);
});
