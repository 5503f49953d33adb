/**
 * EventStore in memory: stored events in a map, deduplicated by their event id. Retention has no
 * partitions here: a sweep deletes every expired event (and its keys) at once.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import {
  type AppendResult,
  type ErasedEvent,
  type EventQuery,
  EventStore,
  type EventStoreService,
  newestFirst,
  type Retention,
  type StoredEvent
} from "../../core/ports/EventStore.ts"
import { expiredBefore } from "../../core/ingest/Retention.ts"

/** An empty `EventStore` held in this process's memory. */
export const make = (): EventStoreService => {
  const events: Array<StoredEvent> = []
  const byEventId = new Map<string, StoredEvent>()
  const byBucket = new Map<string, StoredEvent>()
  const retentions = new Map<string, Retention>()
  /** Removes the event at `index` with its idempotency keys. */
  const remove = (event: StoredEvent, index: number) => {
    events.splice(index, 1)
    if (event.eventId !== null) byEventId.delete(event.workspaceId + "\u0000" + event.eventId)
    if (event.bucketKey !== undefined) byBucket.delete(event.workspaceId + "\u0000" + event.bucketKey)
  }
  const matching = (q: Omit<EventQuery, "limit">): Array<StoredEvent> =>
    events
      .filter(
        (e) =>
          e.workspaceId === q.workspaceId &&
          (q.accountId === undefined || e.accountId === q.accountId) &&
          (q.eventName === undefined || e.eventName === q.eventName) &&
          (q.from === undefined || e.occurredAt >= q.from) &&
          (q.to === undefined || e.occurredAt < q.to) &&
          (q.after === undefined ||
            e.occurredAt < q.after.occurredAt ||
            (e.occurredAt === q.after.occurredAt && e.id < q.after.id))
      )
      .sort(newestFirst)
  return {
    append: (batch) =>
      Effect.sync(() =>
        batch.map((event): AppendResult => {
          if (event.bucketKey !== undefined) {
            const key = event.workspaceId + "\u0000" + event.bucketKey
            const existing = byBucket.get(key)
            if (existing === undefined) byBucket.set(key, event)
            else if (existing.payloadHash === event.payloadHash) return { _tag: "Duplicate", event: existing }
            else {
              const replaced: StoredEvent = { ...event, id: existing.id }
              events[events.indexOf(existing)] = replaced
              byBucket.set(key, replaced)
              return { _tag: "Stored", event: replaced }
            }
          }
          if (event.eventId !== null) {
            const key = event.workspaceId + "\u0000" + event.eventId
            const existing = byEventId.get(key)
            if (existing !== undefined) {
              return existing.payloadHash === event.payloadHash
                ? { _tag: "Duplicate", event: existing }
                : { _tag: "Conflict", event: existing }
            }
            byEventId.set(key, event)
          }
          events.push(event)
          return { _tag: "Stored", event }
        })
      ),
    list: (q) => Effect.sync(() => matching(q).slice(0, q.limit)),
    listAll: (q) => Effect.sync(() => matching(q)),
    getByIds: (workspaceId, refs) =>
      Effect.sync(() => {
        const wanted = new Set(refs.map((ref) => ref.id))
        return events.filter((e) => e.workspaceId === workspaceId && wanted.has(e.id))
      }),
    findByEventId: (workspaceId, eventId) =>
      Effect.sync(() => Option.fromNullable(byEventId.get(workspaceId + "\u0000" + eventId))),
    eraseSubject: (workspaceId, subject) =>
      Effect.sync(() => {
        const erased: Array<ErasedEvent> = []
        for (let i = events.length - 1; i >= 0; i--) {
          const event = events[i]!
          const userId = (event.body as { readonly user_id?: unknown } | null)?.user_id
          const user = typeof userId === "string" ? userId : null
          if (event.workspaceId !== workspaceId) continue
          if (subject.kind === "account" ? event.accountId !== subject.id : user !== subject.id) continue
          remove(event, i)
          erased.push({ id: event.id, userId: user })
        }
        return erased
      }),
    retention: (workspaceId) => Effect.sync(() => Option.fromNullable(retentions.get(workspaceId))),
    setRetention: (workspaceId, retention) => Effect.sync(() => void retentions.set(workspaceId, retention)),
    sweep: ({ defaultRetention, now }) =>
      Effect.sync(() => {
        let deletedEvents = 0
        let deletedKeys = 0
        for (let i = events.length - 1; i >= 0; i--) {
          const event = events[i]!
          const before = expiredBefore(retentions.get(event.workspaceId) ?? defaultRetention, now)
          if (before === undefined || event.occurredAt >= before) continue
          remove(event, i)
          deletedEvents++
          if (event.eventId !== null || event.bucketKey !== undefined) deletedKeys++
        }
        return { createdPartitions: [], droppedPartitions: [], deletedEvents, deletedKeys }
      })
  }
}

/** Provides an empty in-memory `EventStore`. */
export const layerMemory: Layer.Layer<EventStore> = Layer.sync(EventStore, make)
