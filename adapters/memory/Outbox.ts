/**
 * Outbox in memory: one table with synchronous operations, so the memory action ledger enqueues
 * in the same atomic step as its own write.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import {
  type LeaseRenewal,
  type LeaseRequest,
  type NewOutboxItem,
  Outbox,
  type OutboxItem,
  type OutboxService
} from "../../core/ports/Outbox.ts"

/**
 * The in-memory table behind the memory outbox, with synchronous operations so that the memory
 * action ledger can enqueue in the same atomic step as its own write.
 */
export class MemoryOutboxTable {
  readonly items = new Map<string, OutboxItem>()
  readonly byKey = new Map<string, string>()

  /** `Outbox.enqueue`, at once: `false` when the id or `(kind, dedupeKey)` is taken. */
  enqueue(item: NewOutboxItem): boolean {
    const key = item.kind + "\u0000" + item.dedupeKey
    if (this.byKey.has(key) || this.items.has(item.id)) return false
    this.items.set(item.id, {
      ...item,
      attempts: 0,
      leaseOwner: null,
      leaseExpiresAt: null,
      completedAt: null,
      lastError: null
    })
    this.byKey.set(key, item.id)
    return true
  }

  private held(id: string, owner: string): OutboxItem | undefined {
    const item = this.items.get(id)
    return item !== undefined && item.leaseOwner === owner && item.completedAt === null ? item : undefined
  }

  /** `Outbox.lease`, at once: due, unleased items of the kinds asked, oldest due first. */
  lease({ kinds, leaseMillis, limit, now, owner }: LeaseRequest): ReadonlyArray<OutboxItem> {
    const due = [...this.items.values()]
      .filter(
        (i) =>
          i.completedAt === null &&
          i.nextAttemptAt <= now &&
          (i.leaseExpiresAt === null || i.leaseExpiresAt <= now) &&
          (kinds === undefined || kinds.includes(i.kind))
      )
      .sort((a, b) => a.nextAttemptAt - b.nextAttemptAt || a.createdAt - b.createdAt)
      .slice(0, limit)
      .map((i) => ({ ...i, leaseOwner: owner, leaseExpiresAt: now + leaseMillis }))
    for (const i of due) this.items.set(i.id, i)
    return due
  }

  /** `Outbox.complete`, at once: only by the lease's owner. */
  complete(id: string, owner: string, now: number): boolean {
    const item = this.held(id, owner)
    if (item === undefined) return false
    this.items.set(id, { ...item, completedAt: now, leaseOwner: null, leaseExpiresAt: null })
    return true
  }

  /** `Outbox.renew`, at once: the ids whose leases `owner` still held and now extends. */
  renew({ ids, leaseMillis, now, owner }: LeaseRenewal): ReadonlyArray<string> {
    const renewed: Array<string> = []
    for (const id of ids) {
      const item = this.held(id, owner)
      if (item === undefined) continue
      this.items.set(id, { ...item, leaseExpiresAt: now + leaseMillis })
      renewed.push(id)
    }
    return renewed
  }

  /** The `Outbox` port over this table. */
  service(): OutboxService {
    const items = this.items
    const held = (id: string, owner: string) => this.held(id, owner)
    return {
      enqueue: (item) => Effect.sync(() => this.enqueue(item)),
      lease: (request) => Effect.sync(() => this.lease(request)),
      complete: ({ id, now, owner }) => Effect.sync(() => this.complete(id, owner, now)),
      reschedule: ({ error, id, nextAttemptAt, owner }) =>
        Effect.sync(() => {
          const item = held(id, owner)
          if (item === undefined) return false
          items.set(id, {
            ...item,
            attempts: item.attempts + 1,
            nextAttemptAt,
            lastError: error,
            leaseOwner: null,
            leaseExpiresAt: null
          })
          return true
        }),
      renew: (renewal) => Effect.sync(() => this.renew(renewal)),
      get: (id) => Effect.sync(() => Option.fromNullable(items.get(id))),
      findByKey: (kind, dedupeKey) =>
        Effect.sync(() => {
          const id = this.byKey.get(kind + "\u0000" + dedupeKey)
          return Option.fromNullable(id === undefined ? undefined : items.get(id))
        })
    }
  }
}

/** Provides an empty in-memory `Outbox`. */
export const layerMemory: Layer.Layer<Outbox> = Layer.sync(Outbox, () => new MemoryOutboxTable().service())
