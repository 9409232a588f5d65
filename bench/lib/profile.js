'use strict';
/**
 * Summarise a V8 `.cpuprofile` (from `node --cpu-prof`): self time per function over the
 * whole profile or over a time window. V8 stamps samples with CLOCK_MONOTONIC microseconds,
 * the same clock as `process.hrtime.bigint()` in any process on the machine, so a window
 * taken by the bench around a load run selects exactly that run's samples.
 */
const fs = require('node:fs');
const path = require('node:path');

/** `file:///abs/path.js` or `/abs/path.js` → path relative to `root`; `node:…` and others unchanged. */
function where(url, root) {
  if (!url) return '';
  const file = url.startsWith('file://') ? url.slice('file://'.length) : url;
  return file.startsWith('/') ? path.relative(root, file) : file;
}

/**
 * @param {string} file
 * @param {{top?: number, root?: string, windowUs?: [number, number], requests?: number}} opts
 */
function summarise(file, { top = 25, root = process.cwd(), windowUs = null, requests = 0 } = {}) {
  const profile = JSON.parse(fs.readFileSync(file, 'utf8'));
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const counts = new Map();
  let t = profile.startTime;
  let samples = 0;
  let windowed = windowUs !== null;
  const tally = (useWindow) => {
    counts.clear();
    samples = 0;
    t = profile.startTime;
    for (let i = 0; i < profile.samples.length; i++) {
      t += profile.timeDeltas[i] ?? 0;
      if (useWindow && (t < windowUs[0] || t > windowUs[1])) continue;
      const id = profile.samples[i];
      counts.set(id, (counts.get(id) ?? 0) + 1);
      samples++;
    }
  };
  tally(windowed);
  if (windowed && samples === 0) {
    windowed = false;
    tally(false);
  }
  const spanUs = windowed ? windowUs[1] - windowUs[0] : profile.endTime - profile.startTime;
  const perSampleUs = spanUs / Math.max(1, samples);
  const fnSelf = new Map();
  let idle = 0;
  let gc = 0;
  for (const [id, count] of counts) {
    const f = byId.get(id).callFrame;
    const at = f.url ? `${where(f.url, root)}:${f.lineNumber + 1}` : '';
    const name = `${f.functionName || '(anonymous)'}${at ? ` ${at}` : ''}`;
    if (f.functionName === '(idle)') idle += count;
    if (f.functionName === '(garbage collector)') gc += count;
    fnSelf.set(name, (fnSelf.get(name) ?? 0) + count);
  }
  const busy = samples - idle;
  const pct = (n) => Math.round((n / Math.max(1, busy)) * 1000) / 10;
  // With the requests the window served: samples as µs of the main thread per request.
  const perReq = (n) => (requests > 0 ? Math.round(((n * perSampleUs) / requests) * 100) / 100 : null);
  const rows = [...fnSelf.entries()]
    .filter(([name]) => !name.startsWith('(idle)'))
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([name, count]) => ({
      function: name,
      self_ms: Math.round((count * perSampleUs) / 100) / 10,
      busy_pct: pct(count),
      us_per_req: perReq(count),
    }));
  // Self time grouped by source file: where the time goes, by module.
  const byFile = new Map();
  for (const [id, count] of counts) {
    const f = byId.get(id).callFrame;
    if (f.functionName === '(idle)') continue;
    const file = f.url ? where(f.url, root) : `(${f.functionName || 'native'})`;
    byFile.set(file, (byFile.get(file) ?? 0) + count);
  }
  const files = [...byFile.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 15)
    .map(([file, count]) => ({ file, busy_pct: pct(count), us_per_req: perReq(count) }));
  return {
    windowed,
    samples,
    busy_samples: busy,
    busy_us_per_req: perReq(busy),
    idle_pct: Math.round((idle / Math.max(1, samples)) * 1000) / 10,
    gc_pct_of_busy: pct(gc),
    span_ms: Math.round(spanUs / 1000),
    top: rows,
    files,
  };
}

module.exports = { summarise };

if (require.main === module) {
  const file = process.argv[2];
  if (!file) {
    console.error('usage: node bench/lib/profile.js <file.cpuprofile> [top] [requests served]');
    process.exit(2);
  }
  const s = summarise(file, { top: Number(process.argv[3] || 25), requests: Number(process.argv[4] || 0) });
  console.log(`${s.samples} samples, ${s.busy_samples} busy, ${s.span_ms} ms, GC ${s.gc_pct_of_busy}% of busy`);
  for (const r of s.top) console.log(`${String(r.busy_pct).padStart(5)}%  ${String(r.self_ms).padStart(8)} ms  ${r.function}`);
  console.log('by file:');
  for (const r of s.files) console.log(`${String(r.busy_pct).padStart(5)}%  ${r.file}`);
}
