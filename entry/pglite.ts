/**
 * `accord/pglite`: an `@effect/sql` `SqlClient` over embedded PGlite, the embedded default: a small
 * `SqlClient` adapter with a one-permit semaphore, since PGlite is a single session. A data
 * directory on disk has one writer: opening it takes its lock (`DataDirectoryLock`).
 *
 * An entry point for embedders only: nothing in core/, adapters/ or runtimes/ imports it.
 */

export * as DataDirectoryLock from "../adapters/pglite/DataDirectoryLock.ts"
export * from "../adapters/pglite/PgliteClient.ts"
