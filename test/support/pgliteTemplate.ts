/**
 * Test PGlite databases started from archives (`pgliteArchive.ts`) instead of a new `initdb`:
 * opening a new PGlite and migrating it takes seconds per database on a loaded machine, loading
 * an archive about a third of that. `layerEmpty` is a new database as `initdb` leaves it.
 *
 * `layerMigrated` is a database with every migration applied and no rows but the migrations'
 * own, from a pool of such databases (`databasePool.ts`): `SqlStorage.layer` still runs the
 * migrations on it and finds them all applied, so a migration that does not apply fails the
 * archive's build, and with it every PGlite test.
 *
 * vitest's global setup (`globalSetup.ts`) builds the archives once per run and hands their paths
 * to the test files; a process without that setup builds its own on first use.
 */
import { readFileSync } from "node:fs"
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as PgliteClient from "../../adapters/pglite/PgliteClient.ts"
import * as DatabasePool from "./databasePool.ts"
import { type Archives, buildArchives } from "./pgliteArchive.ts"

declare module "vitest" {
  export interface ProvidedContext {
    /** Where the global setup wrote each archive. */
    readonly pgliteArchives: Record<keyof Archives, string> | undefined
  }
}

/** The global setup's archive paths; none outside a vitest worker or without the setup. */
const providedPaths = async (): Promise<Record<keyof Archives, string> | undefined> => {
  try {
    // Imported here, not at the top: processes a test spawns import this module's neighbours
    // (`storage.ts`) outside vitest, where importing vitest throws.
    const { inject } = await import("vitest")
    return inject("pgliteArchives")
  } catch {
    return undefined
  }
}

let archives: Promise<Record<keyof Archives, Blob>> | undefined

/** This run's archives (read once per process), or ones built now without the global setup. */
export const templateArchives = (): Promise<Record<keyof Archives, Blob>> => {
  archives ??= (async () => {
    const paths = await providedPaths()
    const bytes =
      paths === undefined
        ? await buildArchives()
        : { empty: readFileSync(paths.empty), migrated: readFileSync(paths.migrated) }
    return { empty: new Blob([bytes.empty]), migrated: new Blob([bytes.migrated]) }
  })()
  return archives
}

const fromArchive = (kind: keyof Archives): Layer.Layer<PgliteClient.PgliteClient | SqlClient.SqlClient, SqlError> =>
  Layer.unwrapEffect(
    Effect.map(Effect.promise(templateArchives), (loaded) => PgliteClient.layer({ loadDataDir: loaded[kind] }))
  )

/**
 * A migrated in-memory PGlite with no rows but the migrations', from this process's pool
 * (`databasePool.ts`): loaded from the migrated archive when none is idle.
 */
export const layerMigrated: () => Layer.Layer<PgliteClient.PgliteClient | SqlClient.SqlClient, SqlError> =
  DatabasePool.make(() => fromArchive("migrated"))

/** A new in-memory PGlite as `initdb` leaves it: `PgliteClient.layer()`. */
export const layerEmpty = (): Layer.Layer<PgliteClient.PgliteClient | SqlClient.SqlClient, SqlError> =>
  fromArchive("empty")
