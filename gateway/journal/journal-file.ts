/**
 * On-disk pieces of the outcome journal (`journal.ts`): segment names, reading lines back,
 * and the ack cursor file. Nothing here keeps state.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { OutcomeRecord } from '../../protocol/outcome';

export const SEGMENT_NAME = /^outcomes-(\d{12})\.jsonl$/;
const STATE_FILE = 'acks.json';
const STATE_TEMP = /^acks\.json(?:\.\d+)?\.tmp$/;
const READ_CHUNK = 256 * 1024;

export const segmentName = (seq: number): string => `outcomes-${String(seq).padStart(12, '0')}.jsonl`;

/** The ack cursor as stored: segment, byte offset, and ids acked beyond it. */
export interface AckState {
  seq: number;
  offset: number;
  acked: string[];
}

export function parseRecord(line: string): OutcomeRecord | null {
  try {
    const value = JSON.parse(line) as Partial<OutcomeRecord> | null;
    return value !== null && typeof value === 'object' && typeof value.call_id === 'string' ? (value as OutcomeRecord) : null;
  } catch {
    return null;
  }
}

const ID_PREFIX = '{"call_id":"';
const UUID_LENGTH = 36;

/**
 * The call id of a journal line without parsing it: records are written with `call_id` first,
 * so it sits at a fixed place. Anything else falls back to a full parse.
 */
export function callIdOf(line: string): string | null {
  if (line.startsWith(ID_PREFIX) && line.charCodeAt(ID_PREFIX.length + UUID_LENGTH) === 34 && line.endsWith('}')) {
    return line.slice(ID_PREFIX.length, ID_PREFIX.length + UUID_LENGTH);
  }
  return parseRecord(line)?.call_id ?? null;
}

/**
 * Visit complete lines of `file` from `from`. `visit` gets each line and the offset just past
 * its newline, and returns false to stop before that line. Returns the offset where scanning
 * stopped (the start of the refused line, or the end of the last complete line).
 */
export function scanLines(file: string, from: number, visit: (line: string, end: number) => boolean): number {
  const fd = fs.openSync(file, 'r');
  try {
    const chunk = Buffer.allocUnsafe(READ_CHUNK);
    let carry: Buffer | null = null;
    let readAt = from;
    let lineStart = from;
    for (;;) {
      const n = fs.readSync(fd, chunk, 0, READ_CHUNK, readAt);
      if (n === 0) return lineStart;
      readAt += n;
      const buf: Buffer = carry === null ? chunk.subarray(0, n) : Buffer.concat([carry, chunk.subarray(0, n)]);
      let i = 0;
      for (let nl = buf.indexOf(10, i); nl !== -1; nl = buf.indexOf(10, i)) {
        const end = lineStart + (nl - i) + 1;
        if (!visit(buf.toString('utf8', i, nl), end)) return lineStart;
        lineStart = end;
        i = nl + 1;
      }
      carry = i < buf.length ? Buffer.from(buf.subarray(i)) : null;
    }
  } finally {
    fs.closeSync(fd);
  }
}

/** The stored ack cursor; a missing or unreadable file is the start of the journal. */
export function readAckState(dir: string): AckState {
  try {
    const state = JSON.parse(fs.readFileSync(path.join(dir, STATE_FILE), 'utf8')) as Record<string, unknown>;
    if (Number.isSafeInteger(state.seq) && Number.isSafeInteger(state.offset) && Array.isArray(state.acked)) {
      return { seq: state.seq as number, offset: state.offset as number, acked: state.acked.filter((x): x is string => typeof x === 'string') };
    }
  } catch {
    /* missing or unreadable: everything on disk is replayed (control dedupes) */
  }
  return { seq: 0, offset: 0, acked: [] };
}

/** Remove temporary ack files a crash left behind. */
export function removeAckTemps(dir: string): void {
  for (const name of fs.readdirSync(dir)) if (STATE_TEMP.test(name)) fs.rmSync(path.join(dir, name), { force: true });
}

/** Replace the ack file atomically (temp file, fsync, rename), blocking. */
export function writeAckStateSync(dir: string, state: AckState): void {
  const file = path.join(dir, STATE_FILE);
  const tmp = `${file}.tmp`;
  const fd = fs.openSync(tmp, 'w', 0o600);
  try {
    fs.writeSync(fd, JSON.stringify(state));
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(tmp, file);
}

/**
 * Replace the ack file atomically off the event loop. `current()` is asked just before the
 * rename: a write that has been overtaken (by a newer write, or a blocking one at close) is
 * dropped instead of replacing newer state.
 */
export async function writeAckState(dir: string, state: AckState, generation: number, current: () => boolean): Promise<void> {
  const file = path.join(dir, STATE_FILE);
  const tmp = `${file}.${generation}.tmp`;
  const handle = await fs.promises.open(tmp, 'w', 0o600);
  try {
    await handle.writeFile(JSON.stringify(state));
    await handle.sync();
  } finally {
    await handle.close();
  }
  if (current()) await fs.promises.rename(tmp, file);
  else await fs.promises.rm(tmp, { force: true });
}
