/**
 * `accord/sql`: every storage port on one `@effect/sql` `SqlClient` (DESIGN rule 4: "One SQL
 * implementation serves both Postgres and the embedded default"): storage selection
 * (`Database`: PostgreSQL or PGlite), the stores (`SqlStorage.layer`) and the migrations.
 *
 * An entry point for embedders only: nothing in core/, adapters/ or runtimes/ imports it.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export * as Database from "../adapters/sql/Database.ts"
/** @since 0.1.0 */
export * as SqlStorage from "../adapters/sql/Storage.ts"
/** @since 0.1.0 */
export * as Migrations from "../adapters/sql/Migrations.ts"
/** @since 0.1.0 */
export * as Readiness from "../adapters/sql/Readiness.ts"
