'use strict';
/**
 * The stores a bench runs on (`--store sqlite|postgres|both`), and the PostgreSQL server it
 * starts for them: the tests' throwaway cluster (`demo/throwaway-postgres.ts`, from the build
 * under test), here with PostgreSQL's own durability defaults (fsync, synchronous_commit and
 * full_page_writes on), as control's SQLite runs with WAL and synchronous=FULL. The server's
 * CPU time is read from /proc: the postmaster and every process whose parent it is (backends,
 * the checkpointer, the WAL writer, autovacuum), plus what the postmaster's children that
 * exited meanwhile used (its cutime + cstime).
 */
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { parseArgs } = require('node:util');
const { internal } = require('./internals');
const { envInt } = require('./env');

const STORE_CHOICES = { sqlite: ['sqlite'], postgres: ['postgres'], both: ['sqlite', 'postgres'] };

/**
 * The stores named by `--store` (default sqlite), in the order a round runs them, and the
 * values of the bench's own `options` (parseArgs' option descriptions) beside it.
 */
/**
 * @param {string[]} [argv]
 * @param {import('node:util').ParseArgsConfig['options']} [options]
 * @returns {{ choice: string, stores: string[], values: Record<string, any> }}
 */
function storesFromArgs(argv = process.argv.slice(2), options = {}) {
  const { values } = parseArgs({ args: argv, options: { store: { type: 'string', default: 'sqlite' }, ...options }, strict: true });
  const stores = STORE_CHOICES[values.store];
  if (!stores) throw new Error(`--store must be one of ${Object.keys(STORE_CHOICES).join(', ')}, got ${JSON.stringify(values.store)}`);
  return { choice: values.store, stores, values };
}

/** Stores in the order round `round` runs them: sqlite, postgres, then postgres, sqlite, … */
function roundOrder(stores, round) {
  return round % 2 === 0 ? stores : [...stores].reverse();
}

/**
 * Server settings from BENCH_PG_SETTINGS ("name=value,name=value"), on top of PostgreSQL's
 * defaults: e.g. `shared_buffers=1GB,max_wal_size=4GB` to see what tuning changes.
 */
function settingsFromEnv() {
  const raw = process.env.BENCH_PG_SETTINGS ?? '';
  /** @type {Record<string, string>} */
  const out = {};
  for (const part of raw.split(',').map((s) => s.trim())) {
    if (part === '') continue;
    const at = part.indexOf('=');
    if (at <= 0) throw new Error(`BENCH_PG_SETTINGS: expected name=value, got ${JSON.stringify(part)}`);
    out[part.slice(0, at).trim()] = part.slice(at + 1).trim();
  }
  return out;
}

/** Fields 4 (ppid), 14–17 (utime, stime, cutime, cstime) of /proc/<pid>/stat, or null when gone. */
function statOf(pid) {
  let stat;
  try {
    stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const f = (n) => Number(rest[n - 3]);
  return { ppid: f(4), utime: f(14), stime: f(15), cutime: f(16), cstime: f(17) };
}

/** The pids whose parent is `pid`. */
function childrenOf(pid) {
  const out = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const s = statOf(name);
    if (s !== null && s.ppid === pid) out.push(Number(name));
  }
  return out;
}

/**
 * CPU clock ticks the server has used so far: the postmaster's own, what its exited children
 * used (reaped into cutime + cstime), and each live child's. A child that exits between two
 * readings moves from the third term to the second, so the sum only grows.
 */
function serverTicks(pid) {
  const main = statOf(pid);
  if (main === null) throw new Error(`PostgreSQL's postmaster (pid ${pid}) is gone`);
  let ticks = main.utime + main.stime + main.cutime + main.cstime;
  for (const child of childrenOf(pid)) {
    const s = statOf(child);
    if (s !== null) ticks += s.utime + s.stime;
  }
  return ticks;
}

/** Pin the postmaster and its children to `cpu`; backends it forks later inherit it. */
function pinServer(pid, cpu) {
  for (const p of [pid, ...childrenOf(pid)]) {
    try {
      execFileSync('taskset', ['-a', '-p', '-c', String(cpu), String(p)], { stdio: 'ignore' });
    } catch {
      // exited meanwhile
    }
  }
}

/**
 * With BENCH_PG_STATEMENTS=N, the server loads pg_stat_statements and a bench prints, after
 * each step on PostgreSQL, the N statements that took the most time in it (nested ones too:
 * foreign key checks, statements of functions), with their calls, rows and buffer pages.
 */
async function statementStats(cluster, top) {
  const { Client } = require('pg');
  const client = new Client(cluster.url('postgres'));
  await client.connect();
  await client.query('CREATE EXTENSION pg_stat_statements');
  return {
    reset: () => client.query('SELECT pg_stat_statements_reset()'),
    /** The top statements since the last reset, printed under `label` and answered for the results. */
    async report(label) {
      const { rows } = await client.query(
        `SELECT s.calls::int, round(s.total_exec_time::numeric, 1)::float AS total_ms, round(s.mean_exec_time::numeric, 3)::float AS mean_ms,
                s.rows::int, (s.shared_blks_hit + s.shared_blks_read)::bigint::float AS blocks, s.wal_records::float, s.toplevel,
                regexp_replace(s.query, '\\s+', ' ', 'g') AS query
         FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
         WHERE d.datname <> 'postgres' AND s.query NOT IN ('BEGIN', 'COMMIT', 'ROLLBACK')
         ORDER BY s.total_exec_time DESC LIMIT $1`,
        [top],
      );
      console.log(`  postgres statements, ${label} (top ${top} by time)`);
      console.log(
        `  ${'total ms'.padStart(9)} ${'calls'.padStart(7)} ${'mean ms'.padStart(8)} ${'rows/call'.padStart(9)} ${'pages/call'.padStart(10)}  statement`,
      );
      for (const r of rows)
        console.log(
          `  ${r.total_ms.toFixed(0).padStart(9)} ${String(r.calls).padStart(7)} ${r.mean_ms.toFixed(3).padStart(8)} ${(r.rows / r.calls).toFixed(1).padStart(9)} ${(r.blocks / r.calls).toFixed(1).padStart(10)}  ${r.toplevel ? '' : '(nested) '}${r.query.slice(0, 110)}`,
        );
      return rows;
    },
    close: () => client.end(),
  };
}

/**
 * Start a throwaway PostgreSQL cluster for a bench (durable; BENCH_PG_SETTINGS on top; its log
 * appended to BENCH_PG_LOG when set), pinned to `cpu` when given. Without PostgreSQL it throws,
 * saying how to install it.
 */
async function startPostgres({ cpu = null } = {}) {
  const { startCluster, clusterUnavailable } = internal('demo/throwaway-postgres');
  const missing = clusterUnavailable();
  if (missing !== null) throw new Error(`--store postgres: ${missing}: install it with \`apt-get install -y postgresql\` (Debian)`);
  const settings = settingsFromEnv();
  const top = envInt('BENCH_PG_STATEMENTS', 0);
  if (top > 0) Object.assign(settings, { shared_preload_libraries: 'pg_stat_statements', 'pg_stat_statements.track': 'all' });
  const logFile = process.env.BENCH_PG_LOG || undefined;
  const cluster = await startCluster({ durable: true, settings, logFile });
  if (cpu !== null) pinServer(cluster.pid, cpu);
  const version = execFileSync(path.join(pgBinDirOf(), 'postgres'), ['--version'], { encoding: 'utf8' }).trim();
  const statements = top > 0 ? await statementStats(cluster, top) : null;
  return {
    cluster,
    settings,
    logFile,
    version,
    statements,
    ticks: () => serverTicks(cluster.pid),
    stop: async () => {
      await statements?.close();
      await cluster.stop();
    },
  };
}

function pgBinDirOf() {
  return internal('demo/throwaway-postgres').pgBinDir();
}

module.exports = { storesFromArgs, roundOrder, startPostgres, serverTicks, pinServer };
