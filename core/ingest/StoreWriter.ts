/**
 * The `IngestWriter` composed from the storage ports (`makeFromStores`), in one `Transactor`
 * transaction: the writer of the memory storage, and the SQL writer's path for a batch its single
 * statement does not cover (`needsMoreThanFacts`).
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { AccountProfileStore } from "../ports/AccountProfileStore.ts"
import type { ApiKeyScope } from "../ports/ApiKeyStore.ts"
import { EventStore, type StoredEvent } from "../ports/EventStore.ts"
import { FeatureGateStore, type FeatureGateStoreService } from "../ports/FeatureGateStore.ts"
import { IngestWriter, type IngestWriterService, type Submission, type WriteResult } from "../ports/IngestWriter.ts"
import type { StorageError } from "../ports/StorageError.ts"
import { Transactor } from "../ports/Transactor.ts"
import { UsageMeterStore } from "../ports/UsageMeterStore.ts"
import { featureAccessEventName, isAccessEvidence } from "./FeatureAccess.ts"
import type { NormalizedBody } from "./Normalize.ts"
import { checkStableMeaning } from "./UsageRollup.ts"

/**
 * Whether a submission needs more than the event row and its profile facts: a user update, a
 * meter's unit, a rollup bucket that may replace a stored row, or (for `entitlement_active`) the
 * gates it may unlock.
 */
export const needsMoreThanFacts = (submission: Submission): boolean =>
  submission.meter !== undefined ||
  submission.stored.bucketKey !== undefined ||
  Option.isSome(submission.normalized.userUpdate) ||
  submission.stored.eventName === featureAccessEventName

/**
 * Unlocks every checking gate of the event's account that the event is evidence for (spec
 * "States and transitions").
 */
const unlockGates = (
  gates: FeatureGateStoreService,
  event: StoredEvent,
  keyScope: ApiKeyScope
): Effect.Effect<void, StorageError> =>
  Effect.gen(function* () {
    const body = event.body as NormalizedBody
    if (body.event_name !== featureAccessEventName) return
    for (const gate of yield* gates.checking(event.workspaceId, event.accountId)) {
      if (isAccessEvidence(body, gate, { keyScope })) {
        yield* gates.unlock({ workspaceId: gate.workspaceId, id: gate.id, at: event.receivedAt, eventId: event.id })
      }
    }
  })

const meterKeyOf = (workspaceId: string, meterKey: string) => workspaceId + "\u0000" + meterKey

/**
 * The write composed from the storage ports, in one transaction: meter units are claimed first
 * (a refused rollup is not appended), then the events are appended, then the newly stored events'
 * facts, users and gates are written, and finally a unit claimed only by events that were not
 * stored is released again, and rollups of the batch refused only because of that claim are
 * written after all.
 */
export const makeFromStores: Effect.Effect<
  IngestWriterService,
  never,
  EventStore | AccountProfileStore | FeatureGateStore | UsageMeterStore | Transactor
> = Effect.gen(function* () {
  const events = yield* EventStore
  const profiles = yield* AccountProfileStore
  const gates = yield* FeatureGateStore
  const meters = yield* UsageMeterStore
  const transactor = yield* Transactor
  const write = (batch: ReadonlyArray<Submission>): Effect.Effect<ReadonlyArray<WriteResult>, StorageError> =>
    Effect.gen(function* () {
      const results = new Array<WriteResult | undefined>(batch.length)
      // Rollups refused only because an earlier rollup of this batch claimed their meter.
      const refusedByBatchClaim: Array<{ readonly index: number; readonly key: string }> = []
      // Units claimed by this batch: the unit, and whether some stored event uses it.
      const claimed = new Map<
        string,
        { readonly workspaceId: string; readonly meterKey: string; readonly unit: string; used: boolean }
      >()
      for (let i = 0; i < batch.length; i++) {
        const { meter, stored } = batch[i]!
        if (meter === undefined) continue
        const key = meterKeyOf(stored.workspaceId, meter.meterKey)
        const mine = claimed.get(key)
        const existing =
          mine !== undefined
            ? Option.some(mine.unit)
            : yield* meters.claimUnit({
                workspaceId: stored.workspaceId,
                meterKey: meter.meterKey,
                unit: meter.unit,
                now: stored.receivedAt
              })
        if (mine === undefined && Option.isNone(existing)) {
          claimed.set(key, { workspaceId: stored.workspaceId, meterKey: meter.meterKey, unit: meter.unit, used: false })
        }
        const issue = checkStableMeaning(existing, meter.unit)
        if (Option.isSome(issue)) {
          results[i] = { _tag: "UnitChanged", issue: issue.value }
          if (mine !== undefined) refusedByBatchClaim.push({ index: i, key })
        }
      }
      const appendable = batch.flatMap((_, i) => (results[i] === undefined ? [i] : []))
      const appended = yield* events.append(appendable.map((i) => batch[i]!.stored))
      appendable.forEach((i, j) => {
        results[i] = appended[j]!
      })
      const newlyStored = batch.filter((_, i) => results[i]!._tag === "Stored")
      yield* profiles.applyFactsBatch(
        newlyStored
          .filter((s) => s.normalized.profileFacts.length > 0)
          .map((s) => ({
            workspaceId: s.stored.workspaceId,
            accountId: s.stored.accountId,
            facts: s.normalized.profileFacts
          }))
      )
      yield* profiles.recordLogins(newlyStored.flatMap((s) => Option.toArray(s.normalized.login)))
      for (const { keyScope, meter, normalized, stored } of newlyStored) {
        if (Option.isSome(normalized.userUpdate)) yield* profiles.upsertUser(normalized.userUpdate.value)
        yield* unlockGates(gates, stored, keyScope)
        if (meter !== undefined) {
          const claim = claimed.get(meterKeyOf(stored.workspaceId, meter.meterKey))
          if (claim !== undefined) claim.used = true
        }
      }
      const released = new Set<string>()
      for (const [key, claim] of claimed) {
        if (claim.used) continue
        yield* meters.releaseUnit({ workspaceId: claim.workspaceId, meterKey: claim.meterKey, unit: claim.unit })
        released.add(key)
      }
      // A claim released again refused nothing after all: those rollups are written now (fewer
      // submissions each time, so this ends).
      const again = refusedByBatchClaim.filter(({ key }) => released.has(key)).map(({ index }) => index)
      if (again.length > 0) {
        const written = yield* write(again.map((i) => batch[i]!))
        again.forEach((i, j) => {
          results[i] = written[j]!
        })
      }
      return results as ReadonlyArray<WriteResult>
    })
  return { write: (batch) => (batch.length === 0 ? Effect.succeed([]) : transactor.withTransaction(write(batch))) }
})

/**
 * The `IngestWriter` composed over the stores: events, profiles, gates and meters written in one
 * transaction.
 */
export const layerFromStores: Layer.Layer<
  IngestWriter,
  never,
  EventStore | AccountProfileStore | FeatureGateStore | UsageMeterStore | Transactor
> = Layer.effect(IngestWriter, makeFromStores)
