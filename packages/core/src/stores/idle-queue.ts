/**
 * A binary min-heap of `(atMs, key, slot)` records, ordered by `atMs`: where a full
 * `MemoryStore` looks for a key whose state is back to fresh when the round-robin scan has not
 * met one. A record is a lower bound on when its entry may be fresh; it may be stale (the entry
 * was written, removed or given its slot to another key since), so whoever pops it checks the
 * entry itself.
 */
export class IdleQueue {
  private readonly at: number[] = []
  private readonly keys: string[] = []
  private readonly slots: number[] = []
  /** The latest clock reading the records were computed or checked at. */
  nowMs: number

  constructor(nowMs: number) {
    this.nowMs = nowMs
  }

  get size(): number {
    return this.at.length
  }

  /** The smallest `atMs` held; `Infinity` when empty. */
  topAt(): number {
    return this.at.length === 0 ? Number.POSITIVE_INFINITY : this.at[0]!
  }

  push(atMs: number, key: string, slot: number): void {
    let i = this.at.length
    this.at.push(atMs)
    this.keys.push(key)
    this.slots.push(slot)
    while (i > 0) {
      const parent = (i - 1) >> 1
      if (this.at[parent]! <= atMs) break
      this.move(parent, i)
      i = parent
    }
    this.set(i, atMs, key, slot)
  }

  /** Removes the smallest record; `out` receives its key and slot. */
  pop(out: { key: string; slot: number }): void {
    out.key = this.keys[0]!
    out.slot = this.slots[0]!
    const last = this.at.length - 1
    const atMs = this.at[last]!
    const key = this.keys[last]!
    const slot = this.slots[last]!
    this.at.length = last
    this.keys.length = last
    this.slots.length = last
    if (last === 0) return
    let i = 0
    for (;;) {
      let child = 2 * i + 1
      if (child >= last) break
      if (child + 1 < last && this.at[child + 1]! < this.at[child]!) child++
      if (this.at[child]! >= atMs) break
      this.move(child, i)
      i = child
    }
    this.set(i, atMs, key, slot)
  }

  private move(from: number, to: number): void {
    this.set(to, this.at[from]!, this.keys[from]!, this.slots[from]!)
  }

  private set(i: number, atMs: number, key: string, slot: number): void {
    this.at[i] = atMs
    this.keys[i] = key
    this.slots[i] = slot
  }
}
