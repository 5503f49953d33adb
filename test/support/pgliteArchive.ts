/**
 * Builds the PGlite databases the test stores start from (see `pgliteTemplate.ts`) as
 * uncompressed `dumpDataDir` archives (they load fastest): `empty`, a new database as `initdb`
 * leaves it, and `migrated`, the same with every migration applied. Kept free of vitest imports:
 * the global setup runs it in vitest's main process.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as PgliteClient from "../../adapters/pglite/PgliteClient.ts"
import * as Migrations from "../../adapters/sql/Migrations.ts"
import { migrations } from "../../adapters/sql/schema/Migrations.ts"

export interface Archives {
  readonly empty: Uint8Array
  readonly migrated: Uint8Array
}

export const buildArchives = (): Promise<Archives> =>
  Effect.runPromise(
    Effect.scoped(
      Effect.gen(function* () {
        const context = yield* Layer.build(PgliteClient.layer())
        const { pglite } = Context.get(context, PgliteClient.PgliteClient)
        const dump = Effect.promise(async () => new Uint8Array(await (await pglite.dumpDataDir("none")).arrayBuffer()))
        const empty = yield* dump
        yield* Effect.provide(Migrations.run(migrations), context)
        return { empty, migrated: yield* dump }
      })
    )
  )
