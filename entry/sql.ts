/**
 * `accord/sql`: every storage port on one `@effect/sql` `SqlClient` (one SQL implementation serves
 * both PostgreSQL and the embedded default): storage selection (`Database`: PostgreSQL or PGlite),
 * the stores (`SqlStorage.layer`) and the migrations.
 *
 * An entry point for embedders only: nothing in core/, adapters/ or runtimes/ imports it.
 */

export * as Database from "../adapters/sql/Database.ts"
export * as SqlSupport from "../adapters/sql/SqlSupport.ts"
export * as SqlStorage from "../adapters/sql/Storage.ts"
export * as Migrations from "../adapters/sql/Migrations.ts"
export * as Readiness from "../adapters/sql/Readiness.ts"
export * as DirectStatements from "../adapters/sql/DirectStatements.ts"
