/**
 * Master-key rotation (`adapters/sql/MasterKeyRotation.ts`) on PGlite and on PostgreSQL (a fresh
 * schema, when DATABASE_URL is set): every sealed value moves to the new key, the guard then accepts
 * the new key and refuses the old one, and every refusal or failure midway changes nothing.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as MasterKeyCheck from "../../../adapters/sql/MasterKeyCheck.ts"
import * as MasterKeyRotation from "../../../adapters/sql/MasterKeyRotation.ts"
import * as Migrations from "../../../adapters/sql/Migrations.ts"
import * as SecretTable from "../../../adapters/sql/SecretTable.ts"
import { migrations } from "../../../adapters/sql/schema/Migrations.ts"
import * as SecretVault from "../../../core/ports/SecretVault.ts"
import { Cipher, type CipherService, makeAesGcm } from "../../../core/protocol/Cipher.ts"
import { layerMigrated } from "../../support/pgliteTemplate.ts"
import { databaseUrl, layerFreshSchema, warnIfSkipped } from "../../support/postgres.ts"

const keyA = Redacted.make(new Uint8Array(32).fill(0xa1))
const keyB = Redacted.make(new Uint8Array(32).fill(0xb2))
const keyC = Redacted.make(new Uint8Array(32).fill(0xc3))

const refs = [
  SecretVault.connectorSecretRef("conn-1", 1, "actionSigning"),
  SecretVault.connectorSecretRef("conn-1", 1, "completion"),
  SecretVault.connectorSecretRef("conn-1", 2, "actionSigning")
]
const secretOf = (ref: string) => `whsec-${ref}-value`
const actions = ["act-1", "act-2"]
const continuationOf = (id: string) => JSON.stringify({ type: "redirect_url", url: `https://pay.example/${id}` })

/** The whole database state rotation may touch, as raw rows. */
const snapshot = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.all([
    sql`SELECT ref, sealed FROM accord_secrets ORDER BY ref`,
    sql`SELECT action_request_id, sealed_continuation FROM accord_actions ORDER BY action_request_id`,
    sql`SELECT sealed FROM accord_master_key_check`
  ])
)

const insertAction = (id: string, sealed: string | null) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) =>
      sql`INSERT INTO accord_actions (action_request_id, workspace_id, account_id, connection_id, revision,
          provider_idempotency_key, state, request, sealed_continuation, created_at, updated_at, version)
        VALUES (${id}, 'ws', 'acct', 'conn-1', 1, ${`idem-${id}`}, 'acknowledged', '{}'::jsonb, ${sealed}, 0, 0, 1)`
  )

const vaultWith = (cipher: CipherService) =>
  Effect.flatMap(SecretTable.make, (table) => Effect.provideService(SecretVault.make(table), Cipher, cipher))

/** Migrated database, first started with key A: the check, three secrets, two continuations and an action without one. */
const seed = Effect.gen(function* () {
  const a = yield* makeAesGcm(keyA)
  yield* Migrations.run(migrations)
  assert.strictEqual(yield* Effect.provideService(MasterKeyCheck.check, Cipher, a), "recorded")
  const vault = yield* vaultWith(a)
  yield* Effect.forEach(refs, (ref) => Effect.orDie(vault.put(ref, Redacted.make(secretOf(ref)), 1)))
  for (const id of actions) yield* insertAction(id, yield* a.seal(continuationOf(id), `continuation:${id}`))
  yield* insertAction("act-none", null)
})

const guard = (cipher: CipherService) => Effect.exit(Effect.provideService(MasterKeyCheck.check, Cipher, cipher))

const refusedWith = (exit: Exit.Exit<unknown, unknown>, reason: string) =>
  Exit.isFailure(exit) && exit.cause._tag === "Fail" && (exit.cause.error as { reason?: string }).reason === reason

const suite = (name: string, database: () => Layer.Layer<SqlClient.SqlClient, SqlError>) => {
  const inDatabase = <A, E>(body: Effect.Effect<A, E, SqlClient.SqlClient>) =>
    Effect.scoped(Effect.flatMap(Layer.build(database()), (context) => Effect.provide(body, context)))

  describe(`master-key rotation on ${name}`, () => {
    it.live(
      "re-seals every secret, continuation and the check; the guard then takes the new key and refuses the old",
      () =>
        inDatabase(
          Effect.gen(function* () {
            yield* seed
            const [a, b] = [yield* makeAesGcm(keyA), yield* makeAesGcm(keyB)]
            const before = yield* snapshot
            const summary = yield* MasterKeyRotation.rotate({ oldCipher: a, newCipher: b, sameKey: false })
            assert.deepStrictEqual(summary, { accord_secrets: 3, accord_actions: 2, accord_master_key_check: 1 })

            const vault = yield* vaultWith(b)
            for (const ref of refs) {
              const opened = yield* vault.get(ref)
              assert.strictEqual(Option.map(opened, Redacted.value).pipe(Option.getOrNull), secretOf(ref))
            }
            const oldVault = yield* vaultWith(a)
            assert.isTrue(Exit.isFailure(yield* Effect.exit(oldVault.get(refs[0]!))))
            const sql = yield* SqlClient.SqlClient
            for (const id of actions) {
              const [row] = yield* sql<{ readonly sealed_continuation: string }>`
            SELECT sealed_continuation FROM accord_actions WHERE action_request_id = ${id}`
              assert.strictEqual(yield* b.open(row!.sealed_continuation, `continuation:${id}`), continuationOf(id))
            }
            const [none] =
              yield* sql`SELECT sealed_continuation FROM accord_actions WHERE action_request_id = 'act-none'`
            assert.isNull(none!["sealed_continuation"])

            assert.deepStrictEqual(yield* guard(b), Exit.succeed("matched"))
            const old = yield* guard(a)
            assert.isTrue(
              Exit.isFailure(old) && old.cause._tag === "Fail" && old.cause.error._tag === "MasterKeyMismatch"
            )
            // Every stored ciphertext changed.
            const after = yield* snapshot
            for (let i = 0; i < before.length; i++) {
              const [was, is] = [JSON.stringify(before[i]), JSON.stringify(after[i])]
              assert.notStrictEqual(was, is)
            }
          })
        ),
      120_000
    )

    it.live(
      "refuses an old key the database was not started with, and changes nothing",
      () =>
        inDatabase(
          Effect.gen(function* () {
            yield* seed
            const before = yield* snapshot
            const exit = yield* Effect.exit(
              MasterKeyRotation.rotate({
                oldCipher: yield* makeAesGcm(keyC),
                newCipher: yield* makeAesGcm(keyB),
                sameKey: false
              })
            )
            assert.isTrue(refusedWith(exit, "old_key_mismatch"), String(exit))
            assert.deepStrictEqual(yield* snapshot, before)
            assert.deepStrictEqual(yield* guard(yield* makeAesGcm(keyA)), Exit.succeed("matched"))
          })
        ),
      120_000
    )

    it.live(
      "refuses the same key as the new key",
      () =>
        inDatabase(
          Effect.gen(function* () {
            yield* seed
            const before = yield* snapshot
            const a = yield* makeAesGcm(keyA)
            const exit = yield* Effect.exit(MasterKeyRotation.rotate({ oldCipher: a, newCipher: a, sameKey: true }))
            assert.isTrue(refusedWith(exit, "same_key"), String(exit))
            assert.deepStrictEqual(yield* snapshot, before)
          })
        ),
      120_000
    )

    it.live(
      "refuses a database that was never started (no check recorded)",
      () =>
        inDatabase(
          Effect.gen(function* () {
            yield* Migrations.run(migrations)
            const exit = yield* Effect.exit(
              MasterKeyRotation.rotate({
                oldCipher: yield* makeAesGcm(keyA),
                newCipher: yield* makeAesGcm(keyB),
                sameKey: false
              })
            )
            assert.isTrue(refusedWith(exit, "not_initialized"), String(exit))
          })
        ),
      120_000
    )

    it.live(
      "a value that does not open with the old key, found after others were re-sealed, rolls everything back",
      () =>
        inDatabase(
          Effect.gen(function* () {
            yield* seed
            // Sealed under another key: the secrets (re-sealed first) are already updated in the transaction when this fails.
            const c = yield* makeAesGcm(keyC)
            yield* insertAction(
              "act-z-foreign",
              yield* c.seal(continuationOf("act-z-foreign"), "continuation:act-z-foreign")
            )
            const before = yield* snapshot
            const exit = yield* Effect.exit(
              MasterKeyRotation.rotate({
                oldCipher: yield* makeAesGcm(keyA),
                newCipher: yield* makeAesGcm(keyB),
                sameKey: false
              })
            )
            assert.isTrue(refusedWith(exit, "unreadable_value"), String(exit))
            if (Exit.isFailure(exit) && exit.cause._tag === "Fail") {
              assert.include(exit.cause.error.message, "accord_actions act-z-foreign")
              assert.notInclude(exit.cause.error.message, "pay.example")
            }
            assert.deepStrictEqual(yield* snapshot, before)
            assert.deepStrictEqual(yield* guard(yield* makeAesGcm(keyA)), Exit.succeed("matched"))
          })
        ),
      120_000
    )

    it.live(
      "a crash midway (the new cipher dies on its fourth value) rolls everything back",
      () =>
        inDatabase(
          Effect.gen(function* () {
            yield* seed
            const before = yield* snapshot
            const b = yield* makeAesGcm(keyB)
            let sealed = 0
            const dying: CipherService = {
              open: b.open,
              seal: (plain, associatedData) =>
                ++sealed === 4 ? Effect.dieMessage("disk on fire") : b.seal(plain, associatedData)
            }
            const exit = yield* Effect.exit(
              MasterKeyRotation.rotate({ oldCipher: yield* makeAesGcm(keyA), newCipher: dying, sameKey: false })
            )
            assert.isTrue(Exit.isFailure(exit) && exit.cause._tag === "Die", String(exit))
            assert.strictEqual(sealed, 4)
            assert.deepStrictEqual(yield* snapshot, before)
            assert.deepStrictEqual(yield* guard(yield* makeAesGcm(keyA)), Exit.succeed("matched"))
          })
        ),
      120_000
    )
  })
}

// Migrated already: the seed's own `Migrations.run` finds nothing to apply.
suite("PGlite", layerMigrated)

warnIfSkipped("master-key rotation on PostgreSQL")
if (databaseUrl !== undefined) suite("PostgreSQL", () => layerFreshSchema(databaseUrl!))
