/**
 * The `Accept` parser and the browser test built on it (control/http/accept.ts): q-values,
 * the most specific range winning, malformed parts, and what real clients send.
 */
import t from 'tap';
import { parseAccept, prefersHtml, weightOf } from '../../control/http/accept';

const CHROME =
  'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7';
const FIREFOX = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';
const SAFARI = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';

t.test('parseAccept: ranges, q-values, parameters', async (t) => {
  t.same(parseAccept(undefined), []);
  t.same(parseAccept(''), []);
  t.same(parseAccept('Text/HTML;level=1;q=0.5, */*;q=0.1, application/json'), [
    { type: 'text', subtype: 'html', q: 0.5 },
    { type: '*', subtype: '*', q: 0.1 },
    { type: 'application', subtype: 'json', q: 1 },
  ]);
  t.same(parseAccept('text/html;q=2, a/b;q=0.1234, c/d;q=x, e/f;Q=0.3'), [
    { type: 'text', subtype: 'html', q: 0 },
    { type: 'a', subtype: 'b', q: 0 },
    { type: 'c', subtype: 'd', q: 0 },
    { type: 'e', subtype: 'f', q: 0.3 },
  ]);
  t.same(parseAccept('garbage, /x, x/, */html, text/html'), [{ type: 'text', subtype: 'html', q: 1 }], 'malformed ranges are skipped');
});

t.test('weightOf: the most specific matching range decides', async (t) => {
  const ranges = parseAccept('text/*;q=0.3, text/html;q=0.7, */*;q=0.5');
  t.equal(weightOf(ranges, 'text', 'html'), 0.7);
  t.equal(weightOf(ranges, 'text', 'plain'), 0.3);
  t.equal(weightOf(ranges, 'application', 'json'), 0.5);
  t.equal(weightOf(parseAccept('text/html'), 'application', 'json'), 0);
  t.equal(weightOf(parseAccept('text/html;q=0, */*'), 'text', 'html'), 0, 'an explicit q=0 refuses, even under */*');
});

t.test('prefersHtml: browsers yes, programs no', async (t) => {
  for (const [name, header] of [
    ['Chrome', CHROME],
    ['Firefox', FIREFOX],
    ['Safari', SAFARI],
    ['only html', 'text/html'],
    ['html over json', 'application/json;q=0.5, text/html'],
    ['text/* over */*', 'text/*, */*;q=0.1'],
  ] as const)
    t.ok(prefersHtml(header), name);
  for (const [name, header] of [
    ['no header', undefined],
    ['*/*', '*/*'],
    ['json', 'application/json'],
    ['problem+json', 'application/problem+json'],
    ['html and json tied', 'text/html, application/json'],
    ['html tied with */*', 'text/html, */*'],
    ['html ranked below json', 'text/html;q=0.5, application/json'],
    ['html refused', 'text/html;q=0, */*;q=0.1'],
    ['atom feed reader', 'application/atom+xml, application/xml;q=0.9, */*;q=0.8'],
  ] as const)
    t.notOk(prefersHtml(header), name);
});
