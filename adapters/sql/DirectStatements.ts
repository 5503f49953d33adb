/**
 * One statement run straight on the `pg` pool, outside any transaction, answered through a
 * callback with its rows or the driver's error. PostgreSQL only (`Database.layerPg` provides it;
 * PGlite does not). For the ingest route's batch statement, which runs thousands of times a second
 * on its own: measured under `bench:ingest`'s load, the server's CPU per event fell by about 8 %
 * against the same statement through `SqlClient` (docs/performance.md, "Fifth pass"). The
 * statement is prepared by name like every other (`Database`'s `PreparingClient`); it has no
 * `sql.execute` span.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"

/**
 * @since 0.1.0
 */
export interface DirectStatementsService {
  readonly run: (
    text: string,
    values: ReadonlyArray<unknown>,
    done: (error: unknown, rows: ReadonlyArray<Record<string, unknown>>) => void
  ) => void
}

/**
 * @since 0.1.0
 */
export class DirectStatements extends Context.Tag("@accord/adapters/sql/DirectStatements")<DirectStatements, DirectStatementsService>() {}
