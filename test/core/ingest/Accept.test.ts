/**
 * Accepting one event in one call: the rules, the usage meter, the payload hash and the group
 * commit, and what became of the event as a domain result.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as NodeCrypto from "../../../adapters/crypto/NodeCrypto.ts"
import * as MemoryStorage from "../../../adapters/memory/Storage.ts"
import * as Accept from "../../../core/ingest/Accept.ts"
import { layer as committerLayer } from "../../../core/ingest/Committer.ts"
import * as Suppression from "../../../core/ingest/Suppression.ts"
import { EventStore } from "../../../core/ports/EventStore.ts"
import { suggestedEventId } from "../../../core/ingest/UsageRollup.ts"
import { cipherLayer } from "../../support/storage.ts"
import { baseEvent, type Json, now, rollupEvent, valid, withProperties } from "./support.ts"

const key: Accept.IngestKey = { workspaceId: "ws-accept", scope: "ingest" }

const services = Layer.merge(committerLayer(), Suppression.layer).pipe(
  Layer.provideMerge(MemoryStorage.layer),
  Layer.provideMerge(NodeCrypto.layer),
  Layer.provide(cipherLayer)
)

let ids = 0
const accepting = Effect.map(Accept.make, (accept) => (body: unknown) => accept(key, body, `row-${++ids}`, now))

const withoutEventId = (body: Json): Json => {
  const { event_id: _, ...rest } = body
  return rest
}

describe("Accept", () => {
  it.scoped("an event of a suppressed account, or caused by a suppressed user, is Suppressed and not stored", () =>
    Effect.gen(function* () {
      const accept = yield* accepting
      const suppressions = yield* Suppression.Suppressions
      suppressions.add(key.workspaceId, { kind: "account", id: "acct_gone" })
      suppressions.add(key.workspaceId, { kind: "user", id: "user_gone" })
      const ofAccount = yield* accept({ ...baseEvent(), event_id: "evt_gone_1", account_id: "acct_gone" })
      assert.deepStrictEqual(ofAccount, { _tag: "Suppressed", eventId: "evt_gone_1", accountId: "acct_gone" })
      const ofUser = yield* accept({ ...baseEvent(), event_id: "evt_gone_2", user_id: "user_gone" })
      assert.strictEqual(ofUser._tag, "Suppressed")
      const events = yield* EventStore
      for (const eventId of ["evt_gone_1", "evt_gone_2"]) {
        assert.isTrue((yield* events.findByEventId(key.workspaceId, eventId))._tag === "None")
      }
      assert.strictEqual((yield* accept({ ...baseEvent(), event_id: "evt_kept" }))._tag, "Stored")
    }).pipe(Effect.provide(services))
  )

  it.scoped("stores an event once: a retry is a duplicate of it, another payload under its event_id a conflict", () =>
    Effect.gen(function* () {
      const accept = yield* accepting
      const first = yield* accept(baseEvent())
      assert.strictEqual(first._tag, "Stored")
      const retry = yield* accept(baseEvent())
      assert.strictEqual(retry._tag, "Duplicate")
      if (first._tag !== "Stored" || retry._tag !== "Duplicate") return
      assert.strictEqual(retry.event.id, first.event.id)
      assert.isUndefined(first.suggestedEventId)
      assert.strictEqual((yield* accept({ ...baseEvent(), value: 12 }))._tag, "Conflict")
    }).pipe(Effect.provide(services))
  )

  it.scoped("a refused body fails with the rule's rejection and stores nothing", () =>
    Effect.gen(function* () {
      const accept = yield* accepting
      assert.strictEqual((yield* Effect.flip(accept([baseEvent()])))._tag, "BatchNotAccepted")
      assert.strictEqual((yield* Effect.flip(accept({ ...baseEvent(), account_id: undefined })))._tag, "InvalidEvent")
      assert.strictEqual(
        (yield* Effect.flip(accept({ ...baseEvent(), event_name: "page_viewed" })))._tag,
        "NotRevenueRelevant"
      )
      assert.strictEqual((yield* accept(baseEvent()))._tag, "Stored")
    }).pipe(Effect.provide(services))
  )

  it.scoped(
    "a rollup without event_id carries its suggested id; a rollup changing its meter's unit is UnitChanged",
    () =>
      Effect.gen(function* () {
        const accept = yield* accepting
        const rollup = withoutEventId(rollupEvent())
        const stored = yield* accept(rollup)
        assert.strictEqual(stored._tag, "Stored")
        if (stored._tag !== "Stored") return
        assert.strictEqual(
          stored.suggestedEventId,
          suggestedEventId(valid(rollup)).pipe((id) => (id._tag === "Some" ? id.value : undefined))
        )
        assert.isDefined(stored.suggestedEventId)
        const changed = yield* accept(withProperties(rollupEvent(), { unit: "call" }))
        assert.strictEqual(changed._tag, "UnitChanged")
        if (changed._tag === "UnitChanged") assert.strictEqual(changed.issue.path, "properties.unit")
      }).pipe(Effect.provide(services))
  )
})
