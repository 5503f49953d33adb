/**
 * `Readiness` on the SQL database: `GET /readyz` answers ready once the database answers within
 * `readinessTimeout` and the newest migration is applied, so a process is never sent traffic
 * against a schema it does not know.
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import { StorageError } from "../../core/ports/StorageError.ts"
import * as Readiness from "../../core/ports/Readiness.ts"
import * as Migrations from "./Migrations.ts"
import { migrations } from "./schema/Migrations.ts"

/**
 * The newest migration id; `/readyz` fails until it is applied.
 */
export const latestMigrationId: number = Math.max(0, ...Object.keys(migrations).map((key) => Number.parseInt(key, 10)))

/**
 * How long `/readyz` may wait for the database before it reports 503.
 */
export const readinessTimeout: Duration.Duration = Duration.seconds(2)

const notReady = (message: string) => new StorageError({ operation: "readiness", message })

/**
 * Succeeds when the database answers in time and its newest migration is applied; answers
 * within `readinessTimeout` even when the database does not answer at all.
 */
export const check: Effect.Effect<void, StorageError, SqlClient.SqlClient> = Effect.flatMap(
  Migrations.appliedVersions,
  (applied) =>
    applied.some((migration) => migration.id >= latestMigrationId)
      ? Effect.void
      : Effect.fail(notReady("migrations are not applied"))
).pipe(
  Effect.catchTag("SqlError", () => Effect.fail(notReady("the database does not answer"))),
  // The answer does not wait for the abandoned check to wind down: interrupting a statement
  // cancels it over a new connection, which waits as long as a database that does not answer.
  Effect.disconnect,
  Effect.timeoutFail({ duration: readinessTimeout, onTimeout: () => notReady("the database did not answer in time") })
)

/** Readiness for SQL storage: the database answers and every migration is applied. */
export const layer: Layer.Layer<Readiness.Readiness, never, SqlClient.SqlClient> = Readiness.layer(check)
