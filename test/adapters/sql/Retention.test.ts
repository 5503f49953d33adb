/**
 * Retention sweeps on PGlite and PostgreSQL: the intake key sweep deletes only
 * keys past their 24 hour retention, the nonce sweep only nonces past their 10 minute retention
 * (docs/decisions.md, "Nonce length and retention"), each at most `limit` rows per statement; and the
 * stores run them on their own while they are used (every 256th keyed intake, every 256th nonce
 * claim, every 256th nonce a ledger create records).
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, layer } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { intakeKeyLiveSince, intakeKeyRetentionMillis } from "../../../core/connector/IntakeKey.ts"
import { ActionLedger } from "../../../core/ports/ActionLedger.ts"
import { NonceStore, nonceRetentionMillis } from "../../../core/ports/NonceStore.ts"
import { sweepIntakeKeys } from "../../../adapters/sql/ActionLedger.ts"
import { sweepNonces } from "../../../adapters/sql/NonceStore.ts"
import { storageVariants, uid } from "../../support/storage.ts"

const T = 1_700_000_000_000

/** Inserts one intake key per `createdAt` in a workspace of its own; their keys, in order. */
const plantKeys = (workspaceId: string, createdAts: ReadonlyArray<number>) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.forEach(createdAts, (createdAt, i) =>
      Effect.as(
        sql`INSERT INTO accord_intake_keys (workspace_id, idempotency_key, body_hash, action_request_id, created_at)
            VALUES (${workspaceId}, ${`key-${i}`}, ${"a".repeat(64)}, ${uid("ar-")}, ${createdAt})`,
        `key-${i}`
      )
    )
  )

const keysOf = (workspaceId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      sql<{
        idempotency_key: string
      }>`SELECT idempotency_key FROM accord_intake_keys WHERE workspace_id = ${workspaceId} ORDER BY idempotency_key`,
      (rows) => rows.map((r) => r.idempotency_key)
    )
  )

const plantNonces = (scope: string, expiresAts: ReadonlyArray<number>) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.forEach(expiresAts, (expiresAt, i) =>
      Effect.as(
        sql`INSERT INTO accord_nonces (scope, nonce, expires_at) VALUES (${scope}, ${`nonce-${i}`}, ${expiresAt})`,
        `nonce-${i}`
      )
    )
  )

const noncesOf = (scope: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(sql<{ nonce: string }>`SELECT nonce FROM accord_nonces WHERE scope = ${scope} ORDER BY nonce`, (rows) =>
      rows.map((r) => r.nonce)
    )
  )

for (const variant of storageVariants.filter((v) => v.sqlLayer !== undefined)) {
  describe.skipIf(!variant.available)(`retention sweeps (${variant.name})`, () => {
    layer(Layer.orDie(variant.sqlLayer!()), { timeout: 60_000 })((it) => {
      it.effect("the intake key sweep deletes only keys created before the retention began", () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const workspaceId = uid("ws-")
          const liveSince = intakeKeyLiveSince(T)
          yield* plantKeys(workspaceId, [
            liveSince - intakeKeyRetentionMillis,
            liveSince - 1,
            liveSince,
            liveSince + 1,
            T
          ])
          // Other workspaces' expired keys are swept too; count only this workspace's.
          yield* sweepIntakeKeys(sql, liveSince)
          assert.deepStrictEqual(yield* keysOf(workspaceId), ["key-2", "key-3", "key-4"])
          assert.strictEqual(yield* sweepIntakeKeys(sql, liveSince), 0)
        })
      )

      it.effect("one intake key sweep deletes at most its limit", () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const workspaceId = uid("ws-")
          yield* sweepIntakeKeys(sql, intakeKeyLiveSince(T), 1_000_000)
          yield* plantKeys(workspaceId, [T - 3 * 86_400_000, T - 2 * 86_400_000, T - 86_400_001, T - 86_400_001, T])
          assert.strictEqual(yield* sweepIntakeKeys(sql, intakeKeyLiveSince(T), 3), 3)
          assert.strictEqual((yield* keysOf(workspaceId)).length, 2)
          assert.strictEqual(yield* sweepIntakeKeys(sql, intakeKeyLiveSince(T), 3), 1)
          assert.deepStrictEqual(yield* keysOf(workspaceId), ["key-4"])
        })
      )

      it.effect("the nonce sweep deletes only nonces whose retention ended", () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const scope = uid("scope-")
          // Claimed 10 minutes and more ago, exactly 10 minutes ago, just under, and now.
          const claimedAt = [T - 2 * nonceRetentionMillis, T - nonceRetentionMillis, T - nonceRetentionMillis + 1, T]
          yield* plantNonces(
            scope,
            claimedAt.map((at) => at + nonceRetentionMillis)
          )
          yield* sweepNonces(sql, T)
          assert.deepStrictEqual(yield* noncesOf(scope), ["nonce-2", "nonce-3"])
          assert.strictEqual(yield* sweepNonces(sql, T), 0)
        })
      )

      it.effect("one nonce sweep deletes at most its limit", () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const scope = uid("scope-")
          yield* sweepNonces(sql, T, 1_000_000)
          yield* plantNonces(scope, [T - 3, T - 2, T - 1, T + 1])
          assert.strictEqual(yield* sweepNonces(sql, T, 2), 2)
          assert.strictEqual(yield* sweepNonces(sql, T, 2), 1)
          assert.deepStrictEqual(yield* noncesOf(scope), ["nonce-3"])
        })
      )

      it.effect("the nonce store sweeps on its own: within 256 claims an expired nonce is gone, a live one stays", () =>
        Effect.gen(function* () {
          const store = yield* NonceStore
          const scope = uid("scope-")
          yield* plantNonces(scope, [T - 1, T + 1])
          for (let i = 0; i < 256; i++) {
            assert.isTrue(
              yield* store.claim({
                scope: uid("other-"),
                nonce: uid("n-"),
                now: T,
                expiresAt: T + nonceRetentionMillis
              })
            )
          }
          assert.deepStrictEqual(yield* noncesOf(scope), ["nonce-1"])
          // The live one is still a replay.
          assert.isFalse(yield* store.claim({ scope, nonce: "nonce-1", now: T, expiresAt: T + nonceRetentionMillis }))
        })
      )

      it.effect(
        "the action ledger sweeps the nonces its creates record: within 256 of them an expired nonce is gone, a live one stays",
        () =>
          Effect.gen(function* () {
            const ledger = yield* ActionLedger
            const scope = uid("scope-")
            yield* plantNonces(scope, [T - 1, T + 1])
            for (let i = 0; i < 256; i++) {
              const created = yield* ledger.create({
                record: {
                  actionRequestId: uid("ar-"),
                  workspaceId: uid("ws-"),
                  accountId: "acct_42",
                  connectionId: uid("conn-"),
                  revision: 0,
                  providerIdempotencyKey: uid("idem-"),
                  state: "accepted",
                  request: {},
                  acknowledgement: null,
                  sealedContinuation: null,
                  createdAt: T
                },
                history: { at: T, trigger: "customer.execute_received", detail: {} },
                nonce: { scope: uid("other-"), nonce: uid("n-"), now: T, expiresAt: T + nonceRetentionMillis }
              })
              assert.strictEqual(created, "created")
            }
            assert.deepStrictEqual(yield* noncesOf(scope), ["nonce-1"])
          })
      )

      it.effect(
        "the action ledger sweeps on its own: within 256 keyed intakes an expired key is gone, a live one stays",
        () =>
          Effect.gen(function* () {
            const ledger = yield* ActionLedger
            const workspaceId = uid("ws-")
            const liveSince = intakeKeyLiveSince(T)
            yield* plantKeys(workspaceId, [liveSince - 1, liveSince])
            for (let i = 0; i < 256; i++) {
              const actionRequestId = uid("ar-")
              const created = yield* ledger.create({
                record: {
                  actionRequestId,
                  workspaceId: uid("ws-"),
                  accountId: "acct_42",
                  connectionId: uid("conn-"),
                  revision: 0,
                  providerIdempotencyKey: uid("idem-"),
                  state: "dispatching",
                  request: {},
                  acknowledgement: null,
                  sealedContinuation: null,
                  createdAt: T
                },
                history: { at: T, trigger: "intake", detail: {} },
                intakeKey: {
                  claim: {
                    workspaceId,
                    idempotencyKey: uid("k-"),
                    bodyHash: "b".repeat(64),
                    actionRequestId,
                    createdAt: T
                  },
                  liveSince
                }
              })
              assert.strictEqual(created, "created")
            }
            const left = yield* keysOf(workspaceId)
            assert.strictEqual(left.length, 257)
            assert.include(left, "key-1")
            assert.notInclude(left, "key-0")
          })
      )
    })
  })
}
