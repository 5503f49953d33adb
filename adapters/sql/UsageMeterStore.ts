/**
 * `UsageMeterStore` on SQL. The meter's row is the claim: the first insert wins on the primary key,
 * and every later claim reads the winner's unit.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { StorageError } from "../../core/ports/StorageError.ts"
import { UsageMeterStore, type UsageMeterStoreService } from "../../core/ports/UsageMeterStore.ts"
import { orStorageError } from "./SqlSupport.ts"

const operation = "usageMeter.claimUnit"

export const make: Effect.Effect<UsageMeterStoreService, never, SqlClient.SqlClient> = Effect.map(
  SqlClient.SqlClient,
  (sql) => ({
    claimUnit: ({ meterKey, now, unit, workspaceId }) =>
      Effect.gen(function* () {
        // ON CONFLICT waits for a concurrent inserter of the same key to commit, so when this
        // inserts nothing the winner's row is committed, and the SELECT (a new snapshot under
        // READ COMMITTED) sees it. One statement could not: its snapshot predates the winner.
        const inserted = yield* sql`INSERT INTO accord_usage_meters (workspace_id, meter_key, unit, created_at)
            VALUES (${workspaceId}, ${meterKey}, ${unit}, ${now})
            ON CONFLICT (workspace_id, meter_key) DO NOTHING RETURNING unit`.pipe(orStorageError(operation))
        if (inserted.length === 1) return Option.none()
        const [existing] = yield* sql<{ readonly unit: string }>`SELECT unit FROM accord_usage_meters
            WHERE workspace_id = ${workspaceId} AND meter_key = ${meterKey}`.pipe(orStorageError(operation))
        // Meters are never deleted: no row here means a snapshot older than the winner (REPEATABLE READ).
        if (existing === undefined) {
          return yield* new StorageError({ operation, message: "the meter's unit is not visible to this transaction" })
        }
        return Option.some(existing.unit)
      }),
    releaseUnit: ({ meterKey, unit, workspaceId }) =>
      sql`DELETE FROM accord_usage_meters
          WHERE workspace_id = ${workspaceId} AND meter_key = ${meterKey} AND unit = ${unit}`.pipe(
        Effect.asVoid,
        orStorageError("usageMeter.releaseUnit")
      )
  })
)

export const layer: Layer.Layer<UsageMeterStore, never, SqlClient.SqlClient> = Layer.effect(UsageMeterStore, make)
