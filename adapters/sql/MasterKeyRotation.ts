/**
 * Master-key rotation (docs/decisions.md, "Secret handling"): every value sealed under the master key
 * is opened with the old key and sealed again under the new one, and the master-key check
 * (`MasterKeyCheck.ts`) is sealed again with it, in ONE transaction. Either every value moves to the
 * new key or none does: a value that does not open with the old key, or any failure midway, rolls
 * everything back.
 *
 * The transaction is opened through the one SQL transaction boundary (`Transactor.sqlTransaction`),
 * so a `COMMIT` that fails is a `SqlError` the command reports, never a defect; whether that
 * `COMMIT` took effect is then unknown, and the master-key check says which key the database now
 * belongs to (the command can be run again with the key that opens it).
 *
 * The tables are locked against writes for the duration (`SHARE ROW EXCLUSIVE`), but a server that
 * keeps running on the old key would seal new values under it afterwards: stop every server first,
 * then start them again with the new key.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { CipherService } from "../../core/protocol/Cipher.ts"
import * as SecretVault from "../../core/ports/SecretVault.ts"
import * as MasterKeyCheck from "./MasterKeyCheck.ts"
import { sqlTransaction } from "./Transactor.ts"

/**
 * One column of sealed values: where it is, and the associated data each value was sealed with
 * (the same binding the code that sealed it used, or the value would not open).
 */
export interface SealedColumn {
  readonly table: string
  readonly key: string
  readonly column: string
  readonly associatedData: (key: string) => string
}

/**
 * Everything Accord seals under the master key. A new sealed column must be added here (the rotation
 * tests seal a value in each one and check that it opens under the new key afterwards).
 */
export const sealedColumns: ReadonlyArray<SealedColumn> = [
  // Connector secrets (`core/ports/SecretVault.ts`).
  { table: "accord_secrets", key: "ref", column: "sealed", associatedData: SecretVault.associatedData },
  // Stored payment continuations (`core/connector/internal/delivery.ts` seals `continuation:{actionRequestId}`).
  {
    table: "accord_actions",
    key: "action_request_id",
    column: "sealed_continuation",
    associatedData: (actionRequestId) => `continuation:${actionRequestId}`
  },
  // The master-key check itself, last: it says which key the database belongs to.
  { table: "accord_master_key_check", key: "id", column: "sealed", associatedData: () => MasterKeyCheck.label }
]

const rotationRefusals = {
  not_initialized: "the database has no master-key check yet: start the server once with the current key first",
  old_key_mismatch: "the old key is not the master key this database was first started with (nothing was changed)",
  same_key: "the new key is the old key (nothing was changed)"
} as const

/**
 * Why a rotation changed nothing. `place` names a table and a row key (a connector secret
 * reference or an action request id), never a value.
 */
export class RotationRefused extends Schema.TaggedError<RotationRefused>()("RotationRefused", {
  reason: Schema.Literal("not_initialized", "old_key_mismatch", "same_key", "unreadable_value"),
  place: Schema.optional(Schema.String)
}) {
  override get message(): string {
    return this.reason === "unreadable_value"
      ? `a stored value does not open with the old key (${this.place ?? "unknown place"}); nothing was changed`
      : rotationRefusals[this.reason]
  }
}

/**
 * How many values were sealed again, by table.
 */
export type RotationSummary = Readonly<Record<string, number>>

/**
 * Re-seals every value of `sealedColumns` from `oldCipher` to `newCipher` in one transaction.
 * `sameKey` is the caller's comparison of the two keys (the ciphers cannot tell).
 */
export const rotate = (options: {
  readonly oldCipher: CipherService
  readonly newCipher: CipherService
  readonly sameKey: boolean
}): Effect.Effect<RotationSummary, RotationRefused | SqlError, SqlClient.SqlClient> =>
  Effect.gen(function* () {
    if (options.sameKey) return yield* new RotationRefused({ reason: "same_key" })
    const sql = yield* SqlClient.SqlClient
    return yield* sqlTransaction(
      sql,
      Effect.gen(function* () {
        // The names are the constants above; a list of tables needs `unsafe`.
        yield* sql.unsafe(
          `LOCK TABLE ${sealedColumns.map((place) => place.table).join(", ")} IN SHARE ROW EXCLUSIVE MODE`
        )
        const [check] = yield* sql<{ readonly sealed: string }>`SELECT sealed FROM accord_master_key_check WHERE id = 1`
        if (check === undefined) return yield* new RotationRefused({ reason: "not_initialized" })
        const opened = yield* Effect.option(options.oldCipher.open(check.sealed, MasterKeyCheck.label))
        if (opened._tag === "None" || opened.value !== MasterKeyCheck.label) {
          return yield* new RotationRefused({ reason: "old_key_mismatch" })
        }
        const summary: Record<string, number> = {}
        for (const place of sealedColumns) {
          const rows = yield* sql<{ readonly key: string | number; readonly sealed: string }>`
          SELECT ${sql(place.key)} AS key, ${sql(place.column)} AS sealed FROM ${sql(place.table)}
          WHERE ${sql(place.column)} IS NOT NULL ORDER BY ${sql(place.key)}`
          for (const row of rows) {
            const key = String(row.key)
            const associatedData = place.associatedData(key)
            const plain = yield* options.oldCipher
              .open(row.sealed, associatedData)
              .pipe(
                Effect.mapError(
                  () => new RotationRefused({ reason: "unreadable_value", place: `${place.table} ${key}` })
                )
              )
            const sealed = yield* options.newCipher.seal(plain, associatedData)
            yield* sql`UPDATE ${sql(place.table)} SET ${sql(place.column)} = ${sealed} WHERE ${sql(place.key)} = ${row.key}`
          }
          summary[place.table] = rows.length
        }
        return summary
      })
    )
  })
