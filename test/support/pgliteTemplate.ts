/**
 * A migrated, empty PGlite database as a `dumpDataDir` archive. A test's PGlite store loads it
 * instead of running `initdb` and every migration again: that start takes seconds per store on a
 * loaded machine, loading the archive about a third of that. The store is still a database of its
 * own, and `SqlStorage.layer` still runs the migrations on it (finding them all applied), so a
 * migration that does not apply fails the template's build, and with it every PGlite test.
 *
 * vitest's global setup (`globalSetup.ts`) builds the archive once per run, writes it to a
 * directory of its own under the temp directory, removed when the run ends, and hands its path to
 * the test files; a file run without that setup builds its own archive on first use.
 */
import { readFileSync } from "node:fs"
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as PgliteClient from "../../adapters/pglite/PgliteClient.ts"
import { buildTemplate } from "./pgliteArchive.ts"

declare module "vitest" {
  export interface ProvidedContext {
    /** The path of the migrated PGlite archive, when the global setup built one. */
    readonly pgliteTemplate: string | undefined
  }
}

let template: Promise<Blob> | undefined

/** The global setup's archive path; none outside a vitest worker or without the setup. */
const providedPath = async (): Promise<string | undefined> => {
  try {
    // Imported here, not at the top: processes a test spawns import this module's neighbours
    // (`storage.ts`) outside vitest, where importing vitest throws.
    const { inject } = await import("vitest")
    return inject("pgliteTemplate")
  } catch {
    return undefined
  }
}

/** This run's archive (read once per process), or one built now without the global setup. */
export const templateArchive = (): Promise<Blob> => {
  template ??= (async () => {
    const path = await providedPath()
    return new Blob([path === undefined ? await buildTemplate() : readFileSync(path)])
  })()
  return template
}

/**
 * A fresh in-memory PGlite loaded from the migrated archive: the same `PgliteClient` and
 * `SqlClient` as `PgliteClient.layer()`, without the seconds of `initdb` and migrations.
 */
export const layerMigrated = (): Layer.Layer<PgliteClient.PgliteClient | SqlClient.SqlClient, SqlError> =>
  Layer.unwrapEffect(Effect.map(Effect.promise(templateArchive), (loadDataDir) => PgliteClient.layer({ loadDataDir })))
