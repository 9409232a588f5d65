#!/usr/bin/env node
'use strict';
/**
 * `npm run bench:schema-check`: what the response-schema check costs per checked response,
 * Ajv (the built `dist/protocol/response-schema.js`) against the hand-written subset validator
 * it replaced (copied below from `protocol/response-schema.ts` as of commit e62eae7, for this
 * comparison only), on the same schemas and documents, in this one process.
 *
 * For each document: the validator alone, and the whole check as the gateway runs it at body
 * end (`Buffer` → UTF-8 text → `JSON.parse` → validate). BENCH_ROUNDS rounds (default 5), old
 * and new alternating within each round; each figure is the median over the rounds of the
 * mean ns per call in that round, in this process's CPU time (`process.cpuUsage()`), so time
 * spent descheduled on a shared machine is not counted. Also the one-off cost of compiling each schema (once per
 * schema change, when a snapshot is applied). Timings only here, never in tests.
 */
const path = require('node:path');
const { median, round } = require('./lib/stats');

const { compileSchema } = require(path.join(__dirname, '..', 'dist', 'protocol', 'response-schema.js'));

// --- the old validator (protocol/response-schema.ts before Ajv), compile side only ----------

const isPlainObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
const own = (o, k) => Object.prototype.hasOwnProperty.call(o, k);

function codePointLength(s) {
  let n = s.length;
  for (let i = 0; i < s.length - 1; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n--;
        i++;
      }
    }
  }
  return n;
}

function canonical(value) {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (isPlainObject(value)) {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

function typeOf(value) {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  switch (typeof value) {
    case 'string':
      return 'string';
    case 'boolean':
      return 'boolean';
    case 'number':
      return Number.isInteger(value) ? 'integer' : 'number';
    case 'object':
      return 'object';
    default:
      return 'other';
  }
}

function compileNode(s, p) {
  const checks = [];
  if (s.type !== undefined) {
    const types = new Set(Array.isArray(s.type) ? s.type : [s.type]);
    const label = [...types].join(' or ');
    checks.push((v) => {
      const t = typeOf(v);
      return types.has(t) || (t === 'integer' && types.has('number')) ? null : `${p}: expected ${label}, got ${t}`;
    });
  }
  if (s.enum !== undefined) {
    const allowed = new Set(s.enum.map(canonical));
    checks.push((v) => (allowed.has(canonical(v)) ? null : `${p}: not one of the allowed values`));
  }
  if (s.minimum !== undefined) {
    const min = s.minimum;
    checks.push((v) => (typeof v !== 'number' || v >= min ? null : `${p}: ${v} is below the minimum ${min}`));
  }
  if (s.maximum !== undefined) {
    const max = s.maximum;
    checks.push((v) => (typeof v !== 'number' || v <= max ? null : `${p}: ${v} is above the maximum ${max}`));
  }
  if (s.minLength !== undefined) {
    const min = s.minLength;
    checks.push((v) => (typeof v !== 'string' || codePointLength(v) >= min ? null : `${p}: shorter than ${min}`));
  }
  if (s.maxLength !== undefined) {
    const max = s.maxLength;
    checks.push((v) => (typeof v !== 'string' || codePointLength(v) <= max ? null : `${p}: longer than ${max}`));
  }
  if (s.required !== undefined && s.required.length > 0) {
    const required = s.required;
    checks.push((v) => {
      if (!isPlainObject(v)) return null;
      for (const name of required) if (!own(v, name)) return `${p}: missing required property ${JSON.stringify(name)}`;
      return null;
    });
  }
  if (s.properties !== undefined) {
    const props = Object.entries(s.properties).map(([name, sub]) => [name, compileNode(sub, `${p}/${name}`)]);
    checks.push((v) => {
      if (!isPlainObject(v)) return null;
      for (const [name, check] of props) {
        if (!own(v, name)) continue;
        const problem = check(v[name]);
        if (problem !== null) return problem;
      }
      return null;
    });
  }
  if (s.items !== undefined) {
    const item = compileNode(s.items, `${p}/*`);
    checks.push((v) => {
      if (!Array.isArray(v)) return null;
      for (const element of v) {
        const problem = item(element);
        if (problem !== null) return problem;
      }
      return null;
    });
  }
  if (checks.length === 0) return () => null;
  if (checks.length === 1) return checks[0];
  return (v) => {
    for (const check of checks) {
      const problem = check(v);
      if (problem !== null) return problem;
    }
    return null;
  };
}

const compileOld = (schema) => compileNode(schema, '#');

// --- schemas and documents (within the old subset, so both judge the same rules) -------------

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
    const validators = { old: compileOld(c.schema), ajv: compileSchema(c.schema) };
    for (const [which, v] of Object.entries(validators)) {
      if ((v(c.doc) === null) !== c.valid) throw new Error(`${which} judges "${c.name}" wrongly`);
    }
    const fns = {};
    for (const [which, v] of Object.entries(validators)) {
      fns[`${which} validate`] = () => v(c.doc);
      fns[`${which} parse+validate`] = () => v(JSON.parse(body.toString('utf8')));
    }
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
      'old validate ns': round(m['old validate'], 0),
      'ajv validate ns': round(m['ajv validate'], 0),
      'old check ns': round(m['old parse+validate'], 0),
      'ajv check ns': round(m['ajv parse+validate'], 0),
      'ajv/old check': round(m['ajv parse+validate'] / m['old parse+validate'], 2),
    });
  }
  console.table(rows);

  const compileRows = [];
  for (const [name, schema] of [
    ['small', SMALL_SCHEMA],
    ['list', LIST_SCHEMA],
  ]) {
    const times = { old: [], ajv: [] };
    compileSchema(schema);
    for (let r = 0; r < 50; r++) {
      for (const [which, compile] of [
        ['old', compileOld],
        ['ajv', compileSchema],
      ]) {
        const copy = JSON.parse(JSON.stringify(schema));
        const start = cpuNs();
        compile(copy);
        times[which].push((cpuNs() - start) / 1e3);
      }
    }
    compileRows.push({
      schema: name,
      'old compile CPU µs': round(median(times.old), 1),
      'ajv compile CPU µs': round(median(times.ajv), 1),
    });
  }
  console.table(compileRows);
  console.log(`node ${process.version}, ${ROUNDS} rounds, medians of per-round means`);
}

main();
