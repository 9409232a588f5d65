/**
 * Things by the time they expire, soonest first: a binary min-heap, for `coverage.ts`'s failures
 * that stop counting at a time of their own. `next` is read on every call, so it is a field
 * read; `push` and `pop` take O(log n).
 */
export class Expiries<T> {
  private readonly at: number[] = [];
  private readonly items: T[] = [];

  /** How many are held. */
  get size(): number {
    return this.items.length;
  }

  /** When the soonest expires (Infinity when none is held). */
  get next(): number {
    return this.at.length === 0 ? Infinity : this.at[0]!;
  }

  push(at: number, item: T): void {
    let i = this.at.length;
    this.at.push(at);
    this.items.push(item);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (this.at[parent]! <= at) break;
      this.move(parent, i);
      i = parent;
    }
    this.at[i] = at;
    this.items[i] = item;
  }

  /** Take the soonest, with its time; only when `size > 0`. */
  pop(): { at: number; item: T } {
    const top = { at: this.at[0]!, item: this.items[0]! };
    const lastAt = this.at.pop()!;
    const lastItem = this.items.pop()!;
    const n = this.at.length;
    if (n === 0) return top;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= n) break;
      const child = left + 1 < n && this.at[left + 1]! < this.at[left]! ? left + 1 : left;
      if (this.at[child]! >= lastAt) break;
      this.move(child, i);
      i = child;
    }
    this.at[i] = lastAt;
    this.items[i] = lastItem;
    return top;
  }

  private move(from: number, to: number): void {
    this.at[to] = this.at[from]!;
    this.items[to] = this.items[from]!;
  }
}
