import type * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Equal from "effect/Equal"
import * as Exit from "effect/Exit"
import type * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { ActionLedger } from "../../core/ports/ActionLedger.ts"
import { ApiKeyStore } from "../../core/ports/ApiKeyStore.ts"
import { NonceStore } from "../../core/ports/NonceStore.ts"
import { Transactor } from "../../core/ports/Transactor.ts"
import { UsageMeterStore } from "../../core/ports/UsageMeterStore.ts"
import { onOneStore } from "./internal/oneStore.ts"
import { uid } from "./internal/uid.ts"

class Refused extends Data.TaggedError("Refused")<{ readonly reason: string }> {}

/**
 * The stores the `Transactor` suite writes inside one transaction to check they commit and roll
 * back together.
 */
export type Ports = Transactor | ApiKeyStore | UsageMeterStore | NonceStore | ActionLedger

/**
 * The same failure, by value: a failure that crosses a tracing span (as SQL transactions do) comes
 * out as an annotated copy of the error, not the instance that went in.
 */
const assertIsRefused = (failure: unknown, refused: Refused): void => {
  assert.instanceOf(failure, Refused)
  assert.isTrue(Equal.equals(failure, refused))
}

/**
 * The Transactor contract. Everywhere, the wrapped effect's result and failure pass through
 * unchanged and a successful effect's writes are kept. With `sqlLayer` (SQL variants, where the
 * ports share one `SqlClient`) the writes of a failing effect are also all rolled back; memory makes
 * no such promise, so those tests are not registered for it.
 */
export const suite = (
  name: string,
  layer: () => Layer.Layer<Ports, unknown>,
  sqlLayer?: () => Layer.Layer<Ports | SqlClient.SqlClient, unknown>
) =>
  describe(`Transactor contract (${name})`, () => {
    onOneStore(sqlLayer ?? layer, (it) => {
      /** Two writes through two different ports, checked from inside the transaction. */
      const writeBoth = (workspaceId: string) =>
        Effect.gen(function* () {
          const keys = yield* ApiKeyStore
          assert.isTrue(yield* keys.ensureWorkspace(workspaceId, 1_000))
          assert.deepStrictEqual(
            yield* (yield* UsageMeterStore).claimUnit({ workspaceId, meterKey: "seats", unit: "seat", now: 1_000 }),
            Option.none()
          )
          assert.isTrue(yield* keys.workspaceExists(workspaceId))
        })
      /** The meter's unit after the fact: `none` if nothing was kept (this claim then records one). */
      const keptUnit = (workspaceId: string) =>
        Effect.flatMap(UsageMeterStore, (meters) =>
          meters.claimUnit({ workspaceId, meterKey: "seats", unit: "probe", now: 2_000 })
        )

      it.effect("the effect's result passes through", () =>
        Effect.gen(function* () {
          const transactor = yield* Transactor
          assert.deepStrictEqual(yield* transactor.withTransaction(Effect.succeed({ committed: [1, 2] })), {
            committed: [1, 2]
          })
        })
      )

      it.effect("the effect's own failure passes through unchanged", () =>
        Effect.gen(function* () {
          const transactor = yield* Transactor
          const refused = new Refused({ reason: "over quota" })
          assertIsRefused(yield* Effect.flip(transactor.withTransaction(Effect.fail(refused))), refused)
        })
      )

      it.effect("a successful effect keeps both ports' writes", () =>
        Effect.gen(function* () {
          const workspaceId = uid("ws-")
          yield* (yield* Transactor).withTransaction(writeBoth(workspaceId))
          assert.isTrue(yield* (yield* ApiKeyStore).workspaceExists(workspaceId))
          assert.deepStrictEqual(yield* keptUnit(workspaceId), Option.some("seat"))
        })
      )

      if (sqlLayer === undefined) return

      it.effect("a failure after two ports' writes rolls both back", () =>
        Effect.gen(function* () {
          const workspaceId = uid("ws-")
          const refused = new Refused({ reason: "after the writes" })
          const failure = yield* Effect.flip(
            (yield* Transactor).withTransaction(Effect.zipRight(writeBoth(workspaceId), Effect.fail(refused)))
          )
          assertIsRefused(failure, refused)
          assert.isFalse(yield* (yield* ApiKeyStore).workspaceExists(workspaceId))
          assert.deepStrictEqual(yield* keptUnit(workspaceId), Option.none())
        })
      )

      it.effect(
        "batched stores inside a transaction write on its connection: read back inside, rolled back with it",
        () =>
          Effect.gen(function* () {
            const scope = uid("scope-")
            const actionRequestId = uid("ar-")
            const record = {
              actionRequestId,
              workspaceId: uid("ws-"),
              accountId: "acct_1",
              connectionId: uid("conn-"),
              revision: 0,
              providerIdempotencyKey: uid("idem-"),
              state: "queued",
              request: { n: 1 },
              acknowledgement: null,
              sealedContinuation: null,
              createdAt: 1_000
            }
            const refused = new Refused({ reason: "after the claims" })
            const failure = yield* Effect.flip(
              (yield* Transactor).withTransaction(
                Effect.gen(function* () {
                  const nonces = yield* NonceStore
                  const ledger = yield* ActionLedger
                  assert.isTrue(
                    yield* nonces.claim({ scope, nonce: "nonce-in-transaction", now: 1_000, expiresAt: 9_000 })
                  )
                  assert.isFalse(
                    yield* nonces.claim({ scope, nonce: "nonce-in-transaction", now: 1_000, expiresAt: 9_000 })
                  )
                  assert.strictEqual(
                    yield* ledger.create({ record, history: { at: 1_000, trigger: "intake", detail: {} } }),
                    "created"
                  )
                  const inside = Option.getOrThrow(yield* ledger.get(actionRequestId))
                  const moved = yield* ledger.transition({
                    actionRequestId,
                    expectedVersion: inside.version,
                    toState: "accepted",
                    at: 1_001,
                    history: { at: 1_001, trigger: "ack", detail: {} }
                  })
                  assert.strictEqual(moved._tag, "Applied")
                  return yield* Effect.fail(refused)
                })
              )
            )
            assertIsRefused(failure, refused)
            assert.isTrue(Option.isNone(yield* (yield* ActionLedger).get(actionRequestId)))
            assert.isTrue(
              yield* (yield* NonceStore).claim({ scope, nonce: "nonce-in-transaction", now: 1_000, expiresAt: 9_000 })
            )
          })
      )

      it.effect("a defect after two ports' writes rolls both back", () =>
        Effect.gen(function* () {
          const workspaceId = uid("ws-")
          const exit = yield* Effect.exit(
            (yield* Transactor).withTransaction(Effect.zipRight(writeBoth(workspaceId), Effect.die("boom")))
          )
          assert.deepStrictEqual(Exit.isFailure(exit) ? Cause.squash(exit.cause) : exit, "boom")
          assert.isFalse(yield* (yield* ApiKeyStore).workspaceExists(workspaceId))
          assert.deepStrictEqual(yield* keptUnit(workspaceId), Option.none())
        })
      )
    })
  })
