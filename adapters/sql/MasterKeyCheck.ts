/**
 * The master-key guard (connector secrets are sealed under the master key). At the first
 * start the database records a known label sealed under the master key (table
 * `accord_master_key_check`, migration 0010); every later start must open it. A server started with
 * another key is refused at once, rather than running and failing on every stored secret. The
 * record is a `Cipher` seal, not the key or a hash of it, and the check is the very operation the
 * stored secrets need: opening with this key.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { Cipher } from "../../core/protocol/Cipher.ts"

/**
 * The database was first started with another master key.
 */
export class MasterKeyMismatch extends Schema.TaggedError<MasterKeyMismatch>()("MasterKeyMismatch", {}) {}

/**
 * The sealed plaintext, and the associated data binding it to this purpose.
 */
export const label: string = "accord master key check v1"

/**
 * What the check found: `recorded` at the first start, `matched` afterwards.
 */
export type Outcome = "recorded" | "matched"

/**
 * Records the check at the first start, else opens it; fails with `MasterKeyMismatch` when it does
 * not open. Two processes starting at once with different keys: one insert wins, and the other
 * reads the winner's record and is refused.
 */
export const check: Effect.Effect<Outcome, MasterKeyMismatch | SqlError, SqlClient.SqlClient | Cipher> = Effect.gen(
  function* () {
    const sql = yield* SqlClient.SqlClient
    const cipher = yield* Cipher
    const read = sql<{ readonly sealed: string }>`SELECT sealed FROM accord_master_key_check WHERE id = 1`
    let outcome: Outcome = "matched"
    let [row] = yield* read
    if (row === undefined) {
      const sealed = yield* cipher.seal(label, label)
      const inserted = yield* sql<{ readonly id: number }>`
        INSERT INTO accord_master_key_check (id, sealed) VALUES (1, ${sealed}) ON CONFLICT (id) DO NOTHING RETURNING id`
      if (inserted.length === 1) outcome = "recorded"
      ;[row] = yield* read
    }
    const opened = row === undefined ? undefined : yield* Effect.option(cipher.open(row.sealed, label))
    if (opened === undefined || opened._tag === "None" || opened.value !== label) return yield* new MasterKeyMismatch()
    return outcome
  }
)
