'use strict';
/**
 * Child processes for the bench: CPU pinning with taskset, the `svc-ready {...}` line,
 * per-process CPU time and memory from /proc, and a clean stop (SIGTERM, then SIGKILL).
 */
const { spawn, execFileSync } = require('node:child_process');
const fs = require('node:fs');
const readline = require('node:readline');

const READY_PREFIX = 'svc-ready ';

function hasTaskset() {
  try {
    execFileSync('taskset', ['-V'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

function nproc() {
  try {
    return Number(execFileSync('nproc', { encoding: 'utf8' }).trim());
  } catch {
    return require('node:os').cpus().length;
  }
}

function clockTicks() {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
}

/** Pin every thread of an already running process (e.g. this one) to `cpu`. */
function pinSelf(cpu) {
  execFileSync('taskset', ['-a', '-p', '-c', String(cpu), String(process.pid)], { stdio: 'ignore' });
}

/** utime + stime of a whole process (all threads), in clock ticks. */
function cpuTicks(pid) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Field 2 (comm) may hold spaces; everything after the last ')' is field 3 onwards.
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(rest[14 - 3]) + Number(rest[15 - 3]);
}

/**
 * The CPU the named processes spend from now: the returned function gives each one's ticks
 * since (`cpuTicks`), read when it is called, after the run.
 * @param {Record<string, number>} pids
 * @returns {() => Record<string, number>}
 */
function cpuFrom(pids) {
  const before = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, cpuTicks(pid)]));
  return () => Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, cpuTicks(pid) - before[name]]));
}

/**
 * utime + stime of each thread of a process, in clock ticks, keyed by thread id, with the
 * thread's name (`comm`, e.g. `V8 DefaultWorke`); the main thread (tid = pid) is named `main`.
 */
function threadTicks(pid) {
  const out = new Map();
  let tids = [];
  try {
    tids = fs.readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tids) {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const name = String(tid) === String(pid) ? 'main' : stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.set(tid, { name, ticks: Number(rest[14 - 3]) + Number(rest[15 - 3]) });
    } catch {
      // the thread ended meanwhile
    }
  }
  return out;
}

/** VmRSS and VmHWM of a process, in MiB. */
function memory(pid) {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name) => {
    const m = new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status);
    return m ? Number(m[1]) : null;
  };
  const mib = (v) => (v === null ? null : Math.round((v / 1024) * 10) / 10);
  return { rss_mib: mib(kb('VmRSS')), hwm_mib: mib(kb('VmHWM')) };
}

/** Busy and steal clock ticks per CPU (and in total) from /proc/stat. */
function cpuStat() {
  const out = {};
  for (const line of fs.readFileSync('/proc/stat', 'utf8').split('\n')) {
    if (!line.startsWith('cpu')) continue;
    const [name, ...f] = line.trim().split(/\s+/);
    const [user, nice, system, idle, iowait, irq, softirq, steal] = f.map(Number);
    out[name] = {
      busy: user + nice + system + irq + softirq + (steal || 0),
      steal: steal || 0,
      all: user + nice + system + idle + iowait + irq + softirq + (steal || 0),
    };
  }
  return out;
}

/** Clock ticks used so far by this process and every child still running. */
function ourTicks() {
  let total = cpuTicks(process.pid);
  for (const proc of running) {
    try {
      total += cpuTicks(proc.pid);
    } catch {
      // exited meanwhile
    }
  }
  return total;
}

const running = new Set();

class Proc {
  /**
   * @param {string} name label for logs
   * @param {string[]} argv command and arguments
   * @param {{cpu?: number|null, env?: object, cwd?: string, log?: string, readyTimeoutMs?: number, pin?: boolean}} opts
   */
  constructor(name, argv, opts = {}) {
    this.name = name;
    this.argv = argv;
    this.opts = opts;
    this.child = null;
    this.info = null;
    this.exited = null;
    this.logLines = [];
    this.listeners = [];
    this.spawnedAt = 0;
  }

  get pid() {
    return this.info ? this.info.pid : this.child.pid;
  }

  /** Call `fn(record, receivedAtMs)` for each JSON log line the child writes to stderr. */
  onLog(fn) {
    this.listeners.push(fn);
    return () => (this.listeners = this.listeners.filter((l) => l !== fn));
  }

  start() {
    const { cpu = null, env = {}, cwd, log, readyTimeoutMs = 120_000 } = this.opts;
    const [cmd, ...args] = cpu !== null && cpu !== undefined ? ['taskset', '-c', String(cpu), ...this.argv] : this.argv;
    this.spawnedAt = Date.now();
    const child = spawn(cmd, args, {
      cwd,
      env: { ...process.env, ...env, SVC_SUPERVISED: '1' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.child = child;
    running.add(this);
    const logStream = log ? fs.createWriteStream(log, { flags: 'a' }) : null;
    const keep = (line) => {
      this.logLines.push(line);
      if (this.logLines.length > 200) this.logLines.shift();
      logStream?.write(line + '\n');
    };
    this.exitPromise = new Promise((resolve) => {
      child.on('exit', (code, signal) => {
        this.exited = { code, signal };
        running.delete(this);
        logStream?.end();
        resolve(this.exited);
      });
    });
    child.stdin.on('error', () => {});
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`${this.name}: not ready after ${readyTimeoutMs} ms\n${this.tail()}`)),
        readyTimeoutMs,
      );
      readline.createInterface({ input: child.stdout, crlfDelay: Infinity }).on('line', (line) => {
        keep(line);
        if (this.info === null && line.startsWith(READY_PREFIX)) {
          this.info = JSON.parse(line.slice(READY_PREFIX.length));
          clearTimeout(timer);
          resolve(this.info);
        }
      });
      readline.createInterface({ input: child.stderr, crlfDelay: Infinity }).on('line', (line) => {
        keep(line);
        if (this.listeners.length === 0 || !line.startsWith('{')) return;
        let record;
        try {
          record = JSON.parse(line);
        } catch {
          return;
        }
        const at = Date.now();
        for (const fn of this.listeners) fn(record, at);
      });
      child.on('error', (err) => {
        clearTimeout(timer);
        reject(new Error(`${this.name}: ${err.message}`));
      });
      this.exitPromise.then((e) => {
        clearTimeout(timer);
        if (this.info === null) reject(new Error(`${this.name} exited before ready (code ${e.code}, signal ${e.signal})\n${this.tail()}`));
      });
    });
  }

  tail(n = 30) {
    return this.logLines
      .slice(-n)
      .map((l) => `  [${this.name}] ${l}`)
      .join('\n');
  }

  /** SIGTERM, wait up to `graceMs`, then SIGKILL. Resolves with the exit status. */
  async stop(graceMs = 10_000) {
    if (!this.child || this.exited) return this.exited;
    try {
      this.child.kill('SIGTERM');
    } catch {
      // already gone
    }
    const timer = setTimeout(() => {
      try {
        this.child.kill('SIGKILL');
      } catch {
        // already gone
      }
    }, graceMs);
    const status = await this.exitPromise;
    clearTimeout(timer);
    return status;
  }
}

/** Stop every child still running, most recently started first. */
async function stopAll() {
  const all = [...running].reverse();
  for (const proc of all) await proc.stop();
}

/** Last resort on process exit: no awaiting possible, so kill outright. */
function killAllSync() {
  for (const proc of running) {
    try {
      proc.child.kill('SIGKILL');
    } catch {
      // ignore
    }
  }
}

module.exports = {
  Proc,
  hasTaskset,
  nproc,
  clockTicks,
  pinSelf,
  cpuTicks,
  cpuFrom,
  threadTicks,
  cpuStat,
  ourTicks,
  memory,
  stopAll,
  killAllSync,
};
