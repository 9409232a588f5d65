/**
 * The outcome journal's lines (`journal.ts`): reading them back from a segment file, a record
 * from its line, a line's call id. Nothing here keeps state.
 */
import fs from 'node:fs';
import type { OutcomeRecord } from '../../protocol/outcome';

const READ_CHUNK = 256 * 1024;

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
