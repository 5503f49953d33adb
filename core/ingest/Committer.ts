/**
 * Group commit for ingested events. Each request hands its prepared event to the `Committer` and
 * waits; one worker takes whatever has queued up (up to `maxBatch`) and commits it in ONE
 * transaction: the events (unique client `event_id` decides duplicates), the profile facts and user
 * updates of the newly stored ones, and the feature gates an `entitlement_active` event unlocks.
 * Only then is each waiting request answered, so a 202 is never sent before its event is committed,
 * and concurrent requests share the cost of a commit.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"
import { AccountProfileStore, type AccountProfileStoreService } from "../AccountProfileStore.ts"
import type { ApiKeyScope } from "../ApiKeyStore.ts"
import { type AppendResult, EventStore, type EventStoreService, type StoredEvent } from "../EventStore.ts"
import { type FeatureGate, FeatureGateStore, type FeatureGateStoreService } from "../FeatureGateStore.ts"
import type { StorageError } from "../StorageError.ts"
import { Transactor } from "../Transactor.ts"
import { featureAccessEventName, isAccessEvidence } from "./FeatureAccess.ts"
import type { NormalizedBody, NormalizedEvent } from "./Normalize.ts"

/**
 * One event ready to commit.
 *
 * @since 0.1.0
 */
export interface Submission {
  readonly stored: StoredEvent
  readonly normalized: NormalizedEvent
  /** The scope of the key it was sent with (only server ingest keys unlock gates). */
  readonly keyScope: ApiKeyScope
}

/**
 * @since 0.1.0
 */
export interface CommitterService {
  /** Commits the event (with others queued at the same time) and reports what happened to it. */
  readonly submit: (submission: Submission) => Effect.Effect<AppendResult, StorageError>
}

/**
 * @since 0.1.0
 */
export class Committer extends Context.Tag("@accord/core/ingest/Committer")<Committer, CommitterService>() {}

/**
 * The most events committed in one transaction.
 *
 * @since 0.1.0
 */
export const defaultMaxBatch = 256

/**
 * Commits in flight at once: while one transaction waits for its commit to be durable, the next
 * batch is already being written. Adapters write rows in key order, so concurrent batches take
 * their row locks in the same order.
 *
 * @since 0.1.0
 */
export const defaultWorkers = 2

interface Pending {
  readonly submission: Submission
  readonly done: Deferred.Deferred<AppendResult, StorageError>
}

/** Whether a stored event is evidence for a gate (spec "States and transitions"). */
const unlocks = (body: NormalizedBody, gate: FeatureGate, keyScope: ApiKeyScope): boolean =>
  isAccessEvidence(body, gate, { keyScope })

/**
 * Unlocks every checking gate of the event's account that the event is evidence for.
 *
 * @since 0.1.0
 */
export const unlockGates = (
  event: StoredEvent,
  keyScope: ApiKeyScope
): Effect.Effect<void, StorageError, FeatureGateStore> =>
  Effect.gen(function*() {
    const body = event.body as NormalizedBody
    if (body.event_name !== featureAccessEventName) return
    const gates = yield* FeatureGateStore
    for (const gate of yield* gates.checking(event.workspaceId, event.accountId)) {
      if (unlocks(body, gate, keyScope)) {
        yield* gates.unlock({ workspaceId: gate.workspaceId, id: gate.id, at: event.receivedAt, eventId: event.id })
      }
    }
  })

interface Stores {
  readonly events: EventStoreService
  readonly profiles: AccountProfileStoreService
  readonly gates: FeatureGateStoreService
}

const commit = ({ events, gates, profiles }: Stores, batch: ReadonlyArray<Pending>) =>
  Effect.gen(function*() {
    const results = yield* events.append(batch.map((p) => p.submission.stored))
    const newlyStored = batch.filter((_, i) => results[i]!._tag === "Stored").map((p) => p.submission)
    yield* profiles.applyFactsBatch(
      newlyStored
        .filter((s) => s.normalized.profileFacts.length > 0)
        .map((s) => ({ workspaceId: s.stored.workspaceId, accountId: s.stored.accountId, facts: s.normalized.profileFacts }))
    )
    for (const { keyScope, normalized, stored } of newlyStored) {
      if (Option.isSome(normalized.userUpdate)) yield* profiles.upsertUser(normalized.userUpdate.value)
      yield* Effect.provideService(unlockGates(stored, keyScope), FeatureGateStore, gates)
    }
    return results
  })

/**
 * Starts the worker in the current scope.
 *
 * @since 0.1.0
 */
export const make = (options?: { readonly maxBatch?: number; readonly workers?: number }): Effect.Effect<
  CommitterService,
  never,
  Scope.Scope | EventStore | AccountProfileStore | FeatureGateStore | Transactor
> =>
  Effect.gen(function*() {
    const maxBatch = options?.maxBatch ?? defaultMaxBatch
    const queue = yield* Effect.acquireRelease(Queue.unbounded<Pending>(), Queue.shutdown)
    const transactor = yield* Transactor
    const stores: Stores = { events: yield* EventStore, profiles: yield* AccountProfileStore, gates: yield* FeatureGateStore }
    const worker = Effect.gen(function*() {
      const batch = Array.from(yield* Queue.takeBetween(queue, 1, maxBatch))
      const exit = yield* Effect.exit(transactor.withTransaction(commit(stores, batch)))
      yield* Effect.forEach(batch, (pending, i) =>
        Deferred.done(
          pending.done,
          Exit.isSuccess(exit) ? Exit.succeed(exit.value[i]!) : Exit.failCause(exit.cause)
        ), { discard: true })
    })
    for (let i = 0; i < (options?.workers ?? defaultWorkers); i++) yield* Effect.forkScoped(Effect.forever(worker))
    return {
      submit: (submission) =>
        Effect.flatMap(Deferred.make<AppendResult, StorageError>(), (done) =>
          Effect.zipRight(Queue.offer(queue, { submission, done }), Deferred.await(done)))
    }
  })

/**
 * @since 0.1.0
 */
export const layer = (options?: { readonly maxBatch?: number; readonly workers?: number }): Layer.Layer<
  Committer,
  never,
  EventStore | AccountProfileStore | FeatureGateStore | Transactor
> => Layer.scoped(Committer, make(options))
