/**
 * The `Outbox` port: durable work items (dispatches, completion deliveries, reconciliation reads)
 * with attempts, a next-attempt time and leases (spec rule 8: "Use a durable queue or outbox for
 * execution and completion delivery").
 *
 * A worker leases due items; a lease is exclusive until it expires, so any number of workers (in
 * one process or many sharing PostgreSQL) never hold the same item at once. An item is unique per
 * `(kind, dedupeKey)`.
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"
import type { StorageError } from "./StorageError.ts"

/**
 * A failed round's log line: a failure (a storage fault, which the next round retries) at WARN
 * with its message only, no stack trace; anything else (a defect) at ERROR with its cause.
 */
const warnOrError = (what: string, cause: Cause.Cause<unknown>): Effect.Effect<void> => {
  const failure = Cause.failureOption(cause)
  if (failure._tag === "None") return Effect.logError(what, cause)
  const error = failure.value
  const message =
    typeof error === "object" && error !== null && "message" in error ? String(error.message) : String(error)
  return Effect.logWarning(`${what}: ${message}`)
}

/** A unit of durable work to enqueue: its id, kind, dedupe key, payload and when it is due. */
export interface NewOutboxItem {
  readonly id: string
  readonly kind: string
  readonly dedupeKey: string
  readonly payload: unknown
  readonly nextAttemptAt: number
  readonly createdAt: number
}

/** An outbox item as stored: attempts so far, the lease and completion. */
export interface OutboxItem extends NewOutboxItem {
  readonly attempts: number
  readonly leaseOwner: string | null
  readonly leaseExpiresAt: number | null
  readonly completedAt: number | null
  readonly lastError: string | null
}

/** Which due items to lease, for whom and for how long. */
export interface LeaseRequest {
  readonly owner: string
  readonly now: number
  readonly leaseMillis: number
  readonly limit: number
  /** Only these kinds; all kinds when absent. */
  readonly kinds?: ReadonlyArray<string>
}

/** Leases a worker still holds and extends. */
export interface LeaseRenewal {
  readonly ids: ReadonlyArray<string>
  readonly owner: string
  readonly now: number
  readonly leaseMillis: number
}

/**
 * The outbox port: enqueue, lease, renew, reschedule and complete durable work, each lease held by
 * one owner.
 */
export interface OutboxService {
  /** `false` when an item with the same `(kind, dedupeKey)` exists (nothing is changed). */
  readonly enqueue: (item: NewOutboxItem) => Effect.Effect<boolean, StorageError>
  /** Leases up to `limit` due items (not completed, next attempt reached, lease free or expired), oldest due first. */
  readonly lease: (request: LeaseRequest) => Effect.Effect<ReadonlyArray<OutboxItem>, StorageError>
  /** Marks a leased item done; `false` if `owner` no longer holds its lease. */
  readonly complete: (options: {
    readonly id: string
    readonly owner: string
    readonly now: number
  }) => Effect.Effect<boolean, StorageError>
  /** Counts a failed attempt, records the error, releases the lease; `false` if `owner` no longer holds it. */
  readonly reschedule: (options: {
    readonly id: string
    readonly owner: string
    readonly nextAttemptAt: number
    readonly error: string
  }) => Effect.Effect<boolean, StorageError>
  /**
   * The lease heartbeat: extends to `now + leaseMillis` the leases `owner` still holds on `ids`
   * (not completed, not rescheduled, not taken over); the ids whose lease was extended. It never
   * waits for an item another writer is changing at that moment (completing it, say): such an item
   * is left as it is and not in the answer, and the next beat renews it if it is still leased.
   */
  readonly renew: (options: LeaseRenewal) => Effect.Effect<ReadonlyArray<string>, StorageError>
  /** The item with this id, if any. */
  readonly get: (id: string) => Effect.Effect<Option.Option<OutboxItem>, StorageError>
  /** The item with this kind and dedupe key, if any. */
  readonly findByKey: (kind: string, dedupeKey: string) => Effect.Effect<Option.Option<OutboxItem>, StorageError>
}

/** The service tag of the outbox. */
export class Outbox extends Context.Tag("@accord/core/Outbox")<Outbox, OutboxService>() {}

/**
 * What `runLeased` needs: a name for its logs, how to lease, how to run one item, and its timing.
 */
export interface LeasedWorkOptions<A, R> {
  /** Names the loop in its log lines. */
  readonly name: string
  /** Items in flight at once. */
  readonly concurrency: number
  /** The wait when nothing is due, unless `wakeup` signals first. */
  readonly idleMillis: number
  /** Leases up to `limit` due items. */
  readonly lease: (limit: number) => Effect.Effect<ReadonlyArray<A>, StorageError, R>
  /** Works one leased item; its own failures are its to handle (logged, rescheduled). */
  readonly work: (item: A) => Effect.Effect<unknown, never, R>
  /** The outbox item id of a leased item: one still being worked is never started again. */
  readonly idOf: (item: A) => string
  /** Waits for a signal that new work may be due (coalescing, e.g. `DispatchSignal.next`); without it, polling alone. */
  readonly wakeup?: Effect.Effect<unknown>
  /** Renews the leases of the items in flight while they run (`leaseHeartbeat`); without it, a lease lasts its length. */
  readonly heartbeat?: LeaseHeartbeat<R>
  /**
   * Offers the loop's free slots to a producer that creates items already leased to this loop's
   * owner (`DispatchSignal.receive`), for as long as the loop runs: see `HandoffSlots`.
   */
  readonly handoff?: (slots: HandoffSlots<A>) => Effect.Effect<void, never, Scope.Scope>
}

/**
 * Free slots of a `runLeased` loop, for items its producer creates already leased to the loop's
 * owner (in the same write that creates them) and hands over in process instead of leaving them
 * to be found by the next lease. `reserve` takes a free slot, or none when every slot is busy or
 * reserved (the producer then creates the item unleased, for a lease to find); the reservation is
 * ended exactly once, by `start` with the item once its creation committed, or by `release`.
 */
export interface HandoffSlots<A> {
  readonly reserve: Effect.Effect<Option.Option<HandoffSlot<A>>>
}

/**
 * One reserved slot (see `HandoffSlots`); the first of `start` and `release` ends it, later calls do nothing.
 */
export interface HandoffSlot<A> {
  /** Works `item` in this slot: it was created leased to the loop's owner, and committed. */
  readonly start: (item: A) => Effect.Effect<void>
  /** Gives the slot back unused: nothing was created under this reservation. */
  readonly release: Effect.Effect<void>
}

/**
 * A lease heartbeat for `runLeased`: every `everyMillis` the ids still being worked are renewed.
 */
export interface LeaseHeartbeat<R = never> {
  readonly everyMillis: number
  /** Renews the leases of the ids the loop is still working on. */
  readonly renew: (ids: ReadonlyArray<string>) => Effect.Effect<unknown, StorageError, R>
}

/**
 * The heartbeat of `owner`'s leases of `leaseMillis`: renewed every third of the lease, so a lease
 * survives two missed beats (a slow database, a long pause) and a short lease (15–30 s) is safe for
 * work that runs longer. A worker that dies stops beating: its items are free again at most
 * `leaseMillis` later, which is the recovery time after a crash.
 */
export const leaseHeartbeat = (options: {
  readonly outbox: OutboxService
  readonly owner: string
  readonly leaseMillis: number
}): LeaseHeartbeat => {
  const { leaseMillis, outbox, owner } = options
  return {
    everyMillis: Math.max(1, Math.floor(leaseMillis / 3)),
    renew: (ids) => Effect.flatMap(Clock.currentTimeMillis, (now) => outbox.renew({ ids, owner, now, leaseMillis }))
  }
}

/**
 * Works leased items until the scope closes, keeping up to `concurrency` in flight and leasing more
 * as soon as one ends: there is no round barrier, so a slow or hung item holds one slot, never the
 * items behind it. When fewer items are due than slots are free it waits for `wakeup` or
 * `idleMillis`; a failed lease is logged and tried again after `idleMillis`. An item leased again
 * while its first run is still going (its lease ran out) is not started a second time, and an
 * unexpected failure of an item is logged without stopping the loop. With a `heartbeat`, the leases
 * of the items in flight are renewed while they run and a failed renewal is logged (the next beat
 * tries again); an item's lease is no longer renewed once its work has ended. With a `handoff`,
 * a producer may reserve a free slot and hand over an item it created already leased to this
 * loop's owner; a reserved slot counts as busy until it is started or released.
 */
export const runLeased = <A, R>(options: LeasedWorkOptions<A, R>): Effect.Effect<void, never, R | Scope.Scope> =>
  Effect.gen(function* () {
    const scope = yield* Effect.scope
    const idle = Duration.millis(options.idleMillis)
    // Coalescing: a slot was freed since the last look.
    const slot = yield* Queue.sliding<true>(1)
    const working = new Set<string>()
    // Slots reserved by a handoff producer and not yet started or released.
    let reserved = 0
    // Run when an item's fiber has ended, however it ended (an observer: no effect steps per item).
    const settle = (id: string) => () => {
      working.delete(id)
      Queue.unsafeOffer(slot, true)
    }
    const unexpected = (cause: Cause.Cause<unknown>) =>
      Cause.isInterruptedOnly(cause)
        ? Effect.failCause(cause)
        : Effect.logError(`${options.name}: an item failed unexpectedly`, cause)
    /** Counts the item as working; `false` when it already is (leased again while its first run goes on). */
    const claim = (item: A) => {
      const id = options.idOf(item)
      if (working.has(id)) return false
      working.add(id)
      return true
    }
    const fork = (item: A) =>
      Effect.map(Effect.forkIn(Effect.catchAllCause(options.work(item), unexpected), scope), (fiber) =>
        fiber.addObserver(settle(options.idOf(item)))
      )
    const round = Effect.gen(function* () {
      if (working.size + reserved >= options.concurrency) return yield* Queue.take(slot)
      const free = options.concurrency - working.size - reserved
      const items = yield* options.lease(free)
      for (const item of items) if (claim(item)) yield* fork(item)
      // Fewer due items than free slots: everything due is on its way; wait for new work.
      if (items.length < free) {
        yield* options.wakeup === undefined ? Effect.sleep(idle) : Effect.ignore(Effect.timeout(options.wakeup, idle))
      }
    })
    if (options.handoff !== undefined) {
      // Items handed over are started by this loop's own fiber, so their work runs in its context
      // and scope whatever fiber hands them over.
      const handed = yield* Queue.unbounded<A>()
      yield* Effect.forkScoped(Effect.forever(Effect.flatMap(Queue.take(handed), fork)))
      const reserve = Effect.sync((): Option.Option<HandoffSlot<A>> => {
        if (working.size + reserved >= options.concurrency) return Option.none()
        reserved++
        let open = true
        const end = () => {
          if (!open) return false
          open = false
          reserved--
          return true
        }
        return Option.some({
          // The slot passes to the item at once (no lease can count it free in between).
          start: (item) =>
            Effect.suspend(() =>
              !end()
                ? Effect.void
                : claim(item)
                  ? Effect.asVoid(Queue.offer(handed, item))
                  : Effect.asVoid(Queue.offer(slot, true))
            ),
          release: Effect.suspend(() => (end() ? Effect.asVoid(Queue.offer(slot, true)) : Effect.void))
        })
      })
      yield* options.handoff({ reserve })
    }
    const heartbeat = options.heartbeat
    if (heartbeat !== undefined) {
      const beat = Effect.suspend(() => (working.size === 0 ? Effect.void : heartbeat.renew([...working]))).pipe(
        Effect.catchAllCause((cause) =>
          Cause.isInterruptedOnly(cause)
            ? Effect.failCause(cause)
            : warnOrError(`${options.name}: lease renewal failed`, cause)
        )
      )
      yield* Effect.forkScoped(
        Effect.forever(Effect.zipRight(Effect.sleep(Duration.millis(heartbeat.everyMillis)), beat))
      )
    }
    yield* Effect.forkScoped(
      Effect.forever(
        round.pipe(
          Effect.catchAllCause((cause) =>
            Cause.isInterruptedOnly(cause)
              ? Effect.failCause(cause)
              : Effect.zipRight(warnOrError(`${options.name}: leasing failed; retrying`, cause), Effect.sleep(idle))
          )
        )
      )
    )
  })
