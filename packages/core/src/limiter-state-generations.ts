import { isAdaptive } from './adaptive/adaptive-gates.js'
import type { RefundEntry } from './stores/store.js'

/** One life of a state id's state in the store: over once the store has dropped it. */
export interface StateGeneration {
  dropped: boolean
}

/** Something a request holds, with the life of the state it was charged in. */
export interface HeldEntry extends RefundEntry {
  /** Undefined when nothing can drop the state (a store without `retain`, an adaptive gate). */
  readonly generation: StateGeneration | undefined
}

/**
 * The life of each state in force, for a store that drops the state of rules that leave the
 * rule set (`Store.retain`: MemoryStore, SyncedStore). What a request was charged in a state
 * the store has since dropped is gone with it: given back to the state that replaced it (the
 * rule came back, unchanged, so with the same state id) it would free a concurrency slot
 * another request holds, or hand units to a client that never spent them.
 *
 * Memory is bounded by the state ids in force: a dropped life is forgotten here, and lives on
 * only in the leases that still point to it.
 */
export class StateGenerations {
  private readonly live = new Map<string, StateGeneration>()

  /**
   * The life the entry is charged in now; undefined for an adaptive rule's slots, which its
   * gate keeps on this host (a rules swap hands them to the gate in force).
   */
  of(entry: RefundEntry): StateGeneration | undefined {
    if (isAdaptive(entry.rule)) return undefined
    const id = entry.rule.stateId
    let g = this.live.get(id)
    if (g === undefined) {
      g = { dropped: false }
      this.live.set(id, g)
    }
    return g
  }

  /** The store kept the state of these ids and dropped every other: their lives are over. */
  retain(kept: ReadonlySet<string>): void {
    for (const [id, g] of this.live) {
      if (kept.has(id)) continue
      g.dropped = true
      this.live.delete(id)
    }
  }
}

/** The entries whose state the store still holds: the ones there is something to give back to. */
export function stillHeld(entries: readonly HeldEntry[]): readonly HeldEntry[] {
  for (let i = 0; i < entries.length; i++) {
    if (entries[i]!.generation?.dropped === true) {
      return entries.filter((e) => e.generation?.dropped !== true)
    }
  }
  return entries
}
