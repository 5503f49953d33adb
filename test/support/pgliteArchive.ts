/**
 * Builds the migrated, empty PGlite database the test stores start from (see `pgliteTemplate.ts`),
 * as an uncompressed `dumpDataDir` archive (it loads fastest). Kept free of vitest imports: the
 * global setup runs it in vitest's main process.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as PgliteClient from "../../adapters/pglite/PgliteClient.ts"
import * as Migrations from "../../adapters/sql/Migrations.ts"
import { migrations } from "../../adapters/sql/schema/Migrations.ts"

export const buildTemplate = (): Promise<Uint8Array> =>
  Effect.runPromise(
    Effect.scoped(
      Effect.gen(function* () {
        const context = yield* Layer.build(Migrations.layer(migrations).pipe(Layer.provideMerge(PgliteClient.layer())))
        const { pglite } = Context.get(context, PgliteClient.PgliteClient)
        const archive = yield* Effect.promise(() => pglite.dumpDataDir("none"))
        return new Uint8Array(yield* Effect.promise(() => archive.arrayBuffer()))
      })
    )
  )
