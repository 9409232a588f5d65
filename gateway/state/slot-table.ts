/**
 * An open-addressing index from 32-bit hashes to record numbers, held in one `Uint32Array` of
 * `[hash, ref + 1]` pairs (a zero second word marks an empty slot). It stores no keys: its
 * owner keeps the records and compares each candidate the index offers against its own.
 *
 * Linear probing from `hash & mask`. Deleting shifts the rest of the cluster back into the
 * hole (Knuth, TAOCP vol. 3 §6.4, Algorithm R), so no tombstones build up however many
 * deletes and inserts follow. The table doubles before it passes 3/4 full; the stored
 * hashes let it rehash without touching the records.
 */

/** Slots in the smallest table. */
const MIN_SLOTS = 16;

/** Smallest power-of-two slot count that holds `entries` at no more than 3/4 load. */
function slotsFor(entries: number): number {
  let slots = MIN_SLOTS;
  while (slots * 0.75 < entries) slots *= 2;
  return slots;
}

export class SlotTable {
  private slots: Uint32Array;
  private mask: number;
  /** Entries held. */
  size = 0;

  /** @param expected entries to make room for up front (the table still grows past it). */
  constructor(expected = 0) {
    const n = slotsFor(expected);
    this.slots = new Uint32Array(n * 2);
    this.mask = n - 1;
  }

  /** Slots allocated (held entries plus free ones). */
  get capacity(): number {
    return this.mask + 1;
  }

  /** The first slot holding `hash` in its probe sequence, or -1. `hash` must be a uint32. */
  first(hash: number): number {
    return this.scan(hash & this.mask, hash);
  }

  /** The next slot after `slot` holding `hash` in the same probe sequence, or -1. */
  next(slot: number, hash: number): number {
    return this.scan((slot + 1) & this.mask, hash);
  }

  /** The record number held in `slot`. */
  ref(slot: number): number {
    return this.slots[slot * 2 + 1]! - 1;
  }

  private scan(slot: number, hash: number): number {
    const slots = this.slots;
    const mask = this.mask;
    for (let i = slot; ; i = (i + 1) & mask) {
      if (slots[i * 2 + 1] === 0) return -1;
      if (slots[i * 2] === hash) return i;
    }
  }

  /** Make room for `more` entries beyond those held, so the next inserts do not allocate. */
  reserve(more: number): void {
    const needed = slotsFor(this.size + more);
    if (needed > this.mask + 1) this.rehash(needed);
  }

  /** Add `ref` under `hash`. The caller has checked it is not already there. */
  insert(hash: number, ref: number): void {
    if (this.size + 1 > (this.mask + 1) * 0.75) this.rehash((this.mask + 1) * 2);
    this.place(hash, ref);
    this.size++;
  }

  /** Remove `ref` filed under `hash`; false when it is not there. */
  remove(hash: number, ref: number): boolean {
    const slots = this.slots;
    const mask = this.mask;
    let hole = -1;
    for (let i = hash & mask; slots[i * 2 + 1] !== 0; i = (i + 1) & mask) {
      if (slots[i * 2] === hash && slots[i * 2 + 1] === ref + 1) {
        hole = i;
        break;
      }
    }
    if (hole === -1) return false;
    // Move back every later entry of the cluster whose home is not cyclically in (hole, j].
    for (let j = (hole + 1) & mask; slots[j * 2 + 1] !== 0; j = (j + 1) & mask) {
      const home = slots[j * 2]! & mask;
      const stays = hole <= j ? hole < home && home <= j : hole < home || home <= j;
      if (stays) continue;
      slots[hole * 2] = slots[j * 2]!;
      slots[hole * 2 + 1] = slots[j * 2 + 1]!;
      hole = j;
    }
    slots[hole * 2] = 0;
    slots[hole * 2 + 1] = 0;
    this.size--;
    return true;
  }

  private place(hash: number, ref: number): void {
    const slots = this.slots;
    const mask = this.mask;
    let i = hash & mask;
    while (slots[i * 2 + 1] !== 0) i = (i + 1) & mask;
    slots[i * 2] = hash;
    slots[i * 2 + 1] = ref + 1;
  }

  private rehash(slotCount: number): void {
    const old = this.slots;
    this.slots = new Uint32Array(slotCount * 2);
    this.mask = slotCount - 1;
    for (let i = 0; i < old.length; i += 2) if (old[i + 1] !== 0) this.place(old[i]!, old[i + 1]! - 1);
  }
}
