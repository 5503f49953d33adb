/**
 * `accord/pglite`: an `@effect/sql` `SqlClient` over embedded PGlite, the embedded default: a small
 * `SqlClient` adapter with a one-permit semaphore, since PGlite is a single session.
 *
 * An entry point for embedders only: nothing in core/, adapters/ or runtimes/ imports it.
 */

export * from "../adapters/pglite/PgliteClient.ts"
