import { assert, describe } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import type * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import {
  type CapabilityEvidence,
  CapabilityRegistry,
  capabilityValidityMillis
} from "../../core/ports/CapabilityRegistry.ts"
import { Transactor } from "../../core/ports/Transactor.ts"
import { onOneStore } from "./internal/oneStore.ts"
import { uid } from "./internal/uid.ts"

/**
 * The CapabilityRegistry contract (spec "Payment capability evidence lifecycle"). One store per
 * suite; each test uses connections of its own.
 */
export const suite = (name: string, layer: () => Layer.Layer<CapabilityRegistry | Transactor, unknown>) =>
  describe(`CapabilityRegistry contract (${name})`, () => {
    onOneStore(layer, (it) => {
      const evidence = (
        connectionId: string,
        recordedAt: number,
        overrides: Partial<CapabilityEvidence> = {}
      ): CapabilityEvidence => ({
        connectionId,
        revision: 2,
        modes: ["new_subscription", "one_time_purchase"],
        livemode: false,
        connectedAccountReferenceHash: "a".repeat(64),
        responseFingerprint: uid("fp-"),
        providerConnectionGeneration: "gen-1",
        recordedAt,
        expiresAt: recordedAt + capabilityValidityMillis,
        ...overrides
      })

      it.effect("recorded evidence is current, exactly as recorded", () =>
        Effect.gen(function* () {
          const registry = yield* CapabilityRegistry
          const connectionId = uid("conn-")
          const recorded = evidence(connectionId, 1_000, { livemode: true, modes: ["setup_only"] })
          assert.strictEqual(yield* registry.record(recorded), "recorded")
          assert.deepStrictEqual(yield* registry.current(connectionId, 1_000), Option.some(recorded))
          assert.isTrue(Option.isNone(yield* registry.current(uid("conn-"), 1_000)))
        })
      )

      it.effect("recording the same fingerprint again is a replay and does not extend freshness", () =>
        Effect.gen(function* () {
          const registry = yield* CapabilityRegistry
          const connectionId = uid("conn-")
          const first = evidence(connectionId, 1_000)
          assert.strictEqual(yield* registry.record(first), "recorded")
          const replayed = { ...first, recordedAt: 50_000, expiresAt: 50_000 + capabilityValidityMillis }
          assert.strictEqual(yield* registry.record(replayed), "replay")
          assert.deepStrictEqual(yield* registry.current(connectionId, 50_000), Option.some(first))
          assert.isTrue(Option.isNone(yield* registry.current(connectionId, first.expiresAt)))
        })
      )

      it.effect("a different fingerprint replaces the previous set", () =>
        Effect.gen(function* () {
          const registry = yield* CapabilityRegistry
          const connectionId = uid("conn-")
          assert.strictEqual(yield* registry.record(evidence(connectionId, 1_000)), "recorded")
          const next = evidence(connectionId, 2_000, {
            revision: 3,
            modes: ["recover_payment"],
            providerConnectionGeneration: "gen-2"
          })
          assert.strictEqual(yield* registry.record(next), "recorded")
          assert.deepStrictEqual(yield* registry.current(connectionId, 2_000), Option.some(next))
        })
      )

      it.effect("evidence is current strictly before expiresAt, never at or after it", () =>
        Effect.gen(function* () {
          const registry = yield* CapabilityRegistry
          const connectionId = uid("conn-")
          const recorded = evidence(connectionId, 1_000)
          yield* registry.record(recorded)
          assert.isTrue(Option.isSome(yield* registry.current(connectionId, recorded.expiresAt - 1)))
          assert.isTrue(Option.isNone(yield* registry.current(connectionId, recorded.expiresAt)))
          assert.isTrue(Option.isNone(yield* registry.current(connectionId, recorded.expiresAt + 1)))
        })
      )

      it.effect("clear removes the connection's evidence and only that", () =>
        Effect.gen(function* () {
          const registry = yield* CapabilityRegistry
          const connectionId = uid("conn-")
          const other = evidence(uid("conn-"), 1_000)
          yield* registry.record(evidence(connectionId, 1_000))
          yield* registry.record(other)
          yield* registry.clear(connectionId, 2)
          assert.isTrue(Option.isNone(yield* registry.current(connectionId, 1_000)))
          assert.deepStrictEqual(yield* registry.current(other.connectionId, 1_000), Option.some(other))
          yield* registry.clear(uid("conn-"), 2)
        })
      )

      it.effect("evidence of an older revision never replaces a newer revision's", () =>
        Effect.gen(function* () {
          const registry = yield* CapabilityRegistry
          const connectionId = uid("conn-")
          const newer = evidence(connectionId, 2_000, { revision: 3 })
          assert.strictEqual(yield* registry.record(newer), "recorded")
          assert.strictEqual(
            yield* registry.record(evidence(connectionId, 3_000, { revision: 2, modes: ["setup_only"] })),
            "older_revision"
          )
          assert.deepStrictEqual(yield* registry.current(connectionId, 3_000), Option.some(newer))
          // The same revision again, or a newer one, still replaces it.
          const same = evidence(connectionId, 4_000, { revision: 3, modes: ["recover_payment"] })
          assert.strictEqual(yield* registry.record(same), "recorded")
          const next = evidence(connectionId, 5_000, { revision: 4 })
          assert.strictEqual(yield* registry.record(next), "recorded")
          assert.deepStrictEqual(yield* registry.current(connectionId, 5_000), Option.some(next))
        })
      )

      it.effect(
        "a first record of an older revision that waited on a newer one's uncommitted first record is told it is older",
        () =>
          Effect.gen(function* () {
            const registry = yield* CapabilityRegistry
            const transactor = yield* Transactor
            const connectionId = uid("conn-")
            const inserted = yield* Effect.makeLatch(false)
            const commit = yield* Effect.makeLatch(false)
            // Revision 2's first record, held uncommitted until the older one is waiting on it.
            const newer = yield* Effect.fork(
              transactor.withTransaction(
                Effect.zipLeft(
                  registry.record(evidence(connectionId, 1_000, { revision: 2 })),
                  Effect.zipRight(inserted.open, commit.await)
                )
              )
            )
            yield* inserted.await
            const older = yield* Effect.fork(registry.record(evidence(connectionId, 1_000, { revision: 1 })))
            // Real time (the test clock does not move): the older record reaches the row lock meanwhile.
            yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 100)))
            yield* commit.open
            assert.strictEqual(yield* Fiber.join(newer), "recorded")
            assert.strictEqual(yield* Fiber.join(older), "older_revision")
            assert.strictEqual(Option.getOrThrow(yield* registry.current(connectionId, 1_000)).revision, 2)
          })
      )

      it.effect("clear on behalf of an older revision leaves a newer revision's evidence", () =>
        Effect.gen(function* () {
          const registry = yield* CapabilityRegistry
          const connectionId = uid("conn-")
          const recorded = evidence(connectionId, 1_000, { revision: 3 })
          yield* registry.record(recorded)
          yield* registry.clear(connectionId, 2)
          assert.deepStrictEqual(yield* registry.current(connectionId, 1_000), Option.some(recorded))
          yield* registry.clear(connectionId, 3)
          assert.isTrue(Option.isNone(yield* registry.current(connectionId, 1_000)))
          yield* registry.record(evidence(connectionId, 1_000, { revision: 3 }))
          yield* registry.clear(connectionId, 4)
          assert.isTrue(Option.isNone(yield* registry.current(connectionId, 1_000)))
        })
      )

      it.effect("after clear, the same fingerprint records again", () =>
        Effect.gen(function* () {
          const registry = yield* CapabilityRegistry
          const connectionId = uid("conn-")
          const first = evidence(connectionId, 1_000)
          yield* registry.record(first)
          yield* registry.clear(connectionId, 2)
          assert.strictEqual(yield* registry.record(first), "recorded")
          assert.deepStrictEqual(yield* registry.current(connectionId, 1_000), Option.some(first))
        })
      )
    })
  })
