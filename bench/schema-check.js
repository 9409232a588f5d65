#!/usr/bin/env node
'use strict';
/**
 * `npm run bench:schema-check`: what the response-schema check costs per checked response
 * (the built `dist/protocol/response-schema.js`, Ajv), in this one process.
 *
 * For each document: `JSON.parse` alone (what any check pays), the validator alone, and the
 * whole check as the gateway runs it at body end (`Buffer` → UTF-8 text → `JSON.parse` →
 * validate). BENCH_ROUNDS rounds (default 5), the three alternating within each round; each
 * figure is the median over the rounds of the mean ns per call in that round, in this
 * process's CPU time (`process.cpuUsage()`), so time spent descheduled on a shared machine is
 * not counted. Also the one-off cost of compiling each schema (once per schema change, when a
 * snapshot is applied). Timings only here, never in tests.
 */
const { internal } = require('./lib/internals');
const { median, round } = require('./lib/stats');

const { compileSchema } = internal('protocol/response-schema');

// --- schemas and documents --------------------------------------------------------------------

/** The bench upstream's fixed answer (bench/servers/upstream.js) and its schema. */
const SMALL_SCHEMA = {
  type: 'object',
  required: ['ok', 'id', 'result'],
  properties: {
    ok: { type: 'boolean' },
    id: { type: 'string', minLength: 1 },
    result: { type: 'object', required: ['tokens'], properties: { tokens: { type: 'integer', minimum: 0 }, text: { type: 'string' } } },
  },
};
const SMALL = { ok: true, id: 'bench', result: { tokens: 42, text: 'hello from upstream' } };

const ITEM_SCHEMA = {
  type: 'object',
  required: ['id', 'name', 'price', 'currency', 'tags'],
  properties: {
    id: { type: 'integer', minimum: 1 },
    name: { type: 'string', minLength: 1, maxLength: 80 },
    price: { type: 'number', minimum: 0, maximum: 1e9 },
    currency: { enum: ['USD', 'EUR', 'GBP'] },
    tags: { type: 'array', items: { type: 'string', maxLength: 16 } },
    note: { type: ['string', 'null'] },
  },
};
const LIST_SCHEMA = {
  type: 'object',
  required: ['items', 'total'],
  properties: { total: { type: 'integer', minimum: 0 }, items: { type: 'array', items: ITEM_SCHEMA } },
};
const item = (i) => ({
  id: i + 1,
  name: `product number ${i}`,
  price: 10.5 + i,
  currency: ['USD', 'EUR', 'GBP'][i % 3],
  tags: ['a', 'bb', 'ccc'],
  note: i % 2 ? null : 'n',
});
const list = (n) => ({ total: n, items: Array.from({ length: n }, (_, i) => item(i)) });

const CASES = [
  { name: 'bench upstream answer', schema: SMALL_SCHEMA, doc: SMALL, valid: true },
  { name: 'list of 8 items', schema: LIST_SCHEMA, doc: list(8), valid: true },
  { name: 'list of 160 items', schema: LIST_SCHEMA, doc: list(160), valid: true },
  {
    name: 'list of 160, last invalid',
    schema: LIST_SCHEMA,
    doc: { ...list(160), items: [...list(159).items, { ...item(159), currency: 'JPY' }] },
    valid: false,
  },
];

// --- timing ----------------------------------------------------------------------------------

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
/** Each timed loop runs for about this long. */
const TARGET_MS = Number(process.env.BENCH_TARGET_MS ?? 300);

/** This process's CPU time (user + system), ns. */
const cpuNs = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) * 1000;
};

/** Mean CPU ns per call of `fn` over `n` calls. */
function timeLoop(fn, n) {
  let sink = 0;
  const start = cpuNs();
  for (let i = 0; i < n; i++) if (fn() === null) sink++;
  const ns = cpuNs() - start;
  if (sink < 0) console.log(sink);
  return ns / n;
}

/** Calls per loop so one loop takes about TARGET_MS. */
function calibrate(fn) {
  let n = 1000;
  for (;;) {
    const ns = timeLoop(fn, n) * n;
    if (ns > 50e6 || n >= 1e8) return Math.max(1000, Math.round((n * TARGET_MS * 1e6) / ns));
    n *= 4;
  }
}

function main() {
  const rows = [];
  for (const c of CASES) {
    const body = Buffer.from(JSON.stringify(c.doc));
    const validate = compileSchema(c.schema);
    if ((validate(c.doc) === null) !== c.valid) throw new Error(`the validator judges "${c.name}" wrongly`);
    const fns = {
      parse: () => JSON.parse(body.toString('utf8')),
      validate: () => validate(c.doc),
      check: () => validate(JSON.parse(body.toString('utf8'))),
    };
    const sizes = Object.fromEntries(Object.entries(fns).map(([k, fn]) => [k, calibrate(fn)]));
    const samples = Object.fromEntries(Object.keys(fns).map((k) => [k, []]));
    for (let r = 0; r < ROUNDS; r++) {
      const order = r % 2 ? Object.keys(fns).reverse() : Object.keys(fns);
      for (const k of order) samples[k].push(timeLoop(fns[k], sizes[k]));
    }
    const m = Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, median(v)]));
    rows.push({
      case: c.name,
      bytes: body.length,
      'parse ns': round(m.parse, 0),
      'validate ns': round(m.validate, 0),
      'check ns': round(m.check, 0),
      'validate share of check': round(m.validate / m.check, 2),
    });
  }
  console.table(rows);

  const compileRows = [];
  for (const [name, schema] of [
    ['small', SMALL_SCHEMA],
    ['list', LIST_SCHEMA],
  ]) {
    const times = [];
    compileSchema(schema);
    for (let r = 0; r < 50; r++) {
      const copy = JSON.parse(JSON.stringify(schema));
      const start = cpuNs();
      compileSchema(copy);
      times.push((cpuNs() - start) / 1e3);
    }
    compileRows.push({ schema: name, 'compile CPU µs': round(median(times), 1) });
  }
  console.table(compileRows);
  console.log(`node ${process.version}, ${ROUNDS} rounds, medians of per-round means`);
}

main();
