/** One monitored key of a {@link SpaceSaving} summary. */
export interface HeavyHitter {
  readonly key: string
  /** Estimated count: at least the true count, at most the true count plus `error`. */
  readonly count: number
  /** How much of `count` may belong to keys this one replaced (0 when it never replaced one). */
  readonly error: number
}

interface Slot {
  key: string
  count: number
  error: number
  /** Position in the heap array, kept in step so an increment can sift from where it is. */
  at: number
}

/**
 * The space-saving heavy-hitters summary (Metwally, Agrawal, El Abbadi, 2005) in fixed memory:
 * at most `capacity` keys, each with an over-estimated count. When a new key arrives and the
 * summary is full, it replaces the key with the smallest count and inherits that count as its
 * error. With `n` additions in total:
 *
 * - every key whose true count exceeds `n / capacity` is monitored;
 * - a monitored key's estimate exceeds its true count by at most its `error`, which is at most
 *   the smallest count in the summary (itself at most `n / capacity`).
 *
 * The slots sit in a binary min-heap by count, so an addition costs O(log capacity).
 */
export class SpaceSaving {
  private readonly heap: Slot[] = []
  private readonly index = new Map<string, Slot>()
  private added = 0

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) {
      throw new RangeError(`capacity: expected a positive integer, got ${String(capacity)}`)
    }
  }

  /** Additions counted since the summary was made. */
  get total(): number {
    return this.added
  }

  /** Count one occurrence of `key` (or `weight` occurrences). */
  add(key: string, weight: number = 1): void {
    this.added += weight
    const slot = this.index.get(key)
    if (slot !== undefined) {
      slot.count += weight
      this.siftDown(slot.at)
      return
    }
    if (this.heap.length < this.capacity) {
      const fresh: Slot = { key, count: weight, error: 0, at: this.heap.length }
      this.heap.push(fresh)
      this.index.set(key, fresh)
      this.siftUp(fresh.at)
      return
    }
    // Full: the key with the smallest count gives its slot (and its count, as error) away.
    const min = this.heap[0]!
    this.index.delete(min.key)
    min.error = min.count
    min.count += weight
    min.key = key
    this.index.set(key, min)
    this.siftDown(0)
  }

  /** The monitored keys, largest estimate first, at most `limit` of them. */
  top(limit: number = this.capacity): HeavyHitter[] {
    return this.heap
      .map((s) => ({ key: s.key, count: s.count, error: s.error }))
      .sort((a, b) => b.count - a.count || a.error - b.error || (a.key < b.key ? -1 : 1))
      .slice(0, limit)
  }

  /** The smallest monitored count (0 while the summary is not full): the bound on any error. */
  get minCount(): number {
    return this.heap.length < this.capacity ? 0 : this.heap[0]!.count
  }

  private siftUp(i: number): void {
    const h = this.heap
    const s = h[i]!
    while (i > 0) {
      const p = (i - 1) >> 1
      const parent = h[p]!
      if (parent.count <= s.count) break
      h[i] = parent
      parent.at = i
      i = p
    }
    h[i] = s
    s.at = i
  }

  private siftDown(i: number): void {
    const h = this.heap
    const n = h.length
    const s = h[i]!
    for (;;) {
      const l = 2 * i + 1
      if (l >= n) break
      const r = l + 1
      const c = r < n && h[r]!.count < h[l]!.count ? r : l
      const child = h[c]!
      if (child.count >= s.count) break
      h[i] = child
      child.at = i
      i = c
    }
    h[i] = s
    s.at = i
  }
}
