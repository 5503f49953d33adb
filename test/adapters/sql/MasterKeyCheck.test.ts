import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as MasterKeyCheck from "../../../adapters/sql/MasterKeyCheck.ts"
import * as Migrations from "../../../adapters/sql/Migrations.ts"
import { migrations } from "../../../adapters/sql/schema/Migrations.ts"
import { layerAesGcm } from "../../../core/protocol/Cipher.ts"
import { layerEmpty } from "../../support/pgliteTemplate.ts"

const key = (byte: number) => layerAesGcm(Redacted.make(new Uint8Array(32).fill(byte)))

describe("MasterKeyCheck", () => {
  it.live("records at the first start, matches the same key, refuses another key; the record is not the key", () =>
    Effect.gen(function* () {
      const database = yield* Layer.build(Layer.provideMerge(Migrations.layer(migrations), layerEmpty()))
      const run = (byte: number) =>
        MasterKeyCheck.check.pipe(Effect.provide(key(byte)), Effect.provide(database), Effect.exit)

      assert.deepStrictEqual(yield* run(1), Exit.succeed("recorded"))
      assert.deepStrictEqual(yield* run(1), Exit.succeed("matched"))
      const other = yield* run(2)
      assert.isTrue(
        Exit.isFailure(other) && other.cause._tag === "Fail" && other.cause.error._tag === "MasterKeyMismatch"
      )
      assert.deepStrictEqual(yield* run(1), Exit.succeed("matched"))

      const rows = yield* Effect.provide(
        Effect.flatMap(
          SqlClient.SqlClient,
          (sql) => sql<{ readonly sealed: string }>`SELECT sealed FROM accord_master_key_check`
        ),
        database
      )
      assert.strictEqual(rows.length, 1)
      assert.notInclude(rows[0]!.sealed, MasterKeyCheck.label)
      assert.notInclude(rows[0]!.sealed, btoa(String.fromCharCode(...new Uint8Array(32).fill(1))))
    }).pipe(Effect.scoped)
  )
})
