/**
 * The journal's `appendThen`: the lines appended during one event-loop turn, written in one
 * write at its end, and the callbacks that wait for that write (the callers' responses end
 * then).
 */

/** Called once a record given to `appendThen` is written (null) or could not be (the error). Must not throw. */
export type Written = (err: Error | null) => void;

export class TurnBatch {
  private lines: string[] = [];
  private done: Written[] = [];
  private scheduled = false;

  /** `write` writes whole lines at once, or throws with none of them written. */
  constructor(private readonly write: (lines: string[]) => void) {}

  /** Queue `line`; `written` runs after the write at the end of this turn. */
  add(line: string, written: Written): void {
    this.lines.push(line);
    this.done.push(written);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        this.flush();
      });
    }
  }

  /** Write the queued lines now and report to their callbacks. */
  flush(): void {
    if (this.lines.length === 0) return;
    const lines = this.lines;
    const done = this.done;
    this.lines = [];
    this.done = [];
    let error: Error | null = null;
    try {
      this.write(lines);
    } catch (err) {
      error = err as Error;
    }
    // Every call in the write is released even if one callback throws; the first throw then surfaces.
    let thrown: { err: unknown } | null = null;
    for (const written of done) {
      try {
        written(error);
      } catch (err) {
        thrown ??= { err };
      }
    }
    if (thrown !== null) throw thrown.err;
  }
}
