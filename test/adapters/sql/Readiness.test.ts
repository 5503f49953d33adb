import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Readiness from "../../../core/ports/Readiness.ts"
import * as Migrations from "../../../adapters/sql/Migrations.ts"
import * as SqlReadiness from "../../../adapters/sql/Readiness.ts"
import { migrations } from "../../../adapters/sql/schema/Migrations.ts"
import { layerEmpty } from "../../support/pgliteTemplate.ts"

const readiness = Effect.flatMap(Readiness.Readiness, (service) => service.check)

describe("SQL Readiness", () => {
  it("waits for the newest migration", () => {
    assert.strictEqual(
      SqlReadiness.latestMigrationId,
      Math.max(...Object.keys(migrations).map((id) => Number.parseInt(id, 10)))
    )
  })

  it.live("is not ready before the migrations run, and ready after", () =>
    Effect.gen(function* () {
      const fresh = yield* Effect.exit(
        readiness.pipe(Effect.provide(SqlReadiness.layer.pipe(Layer.provide(layerEmpty()))))
      )
      assert.isTrue(Exit.isFailure(fresh))
      const migrated = SqlReadiness.layer.pipe(
        Layer.provideMerge(Migrations.layer(migrations)),
        Layer.provide(layerEmpty())
      )
      yield* readiness.pipe(Effect.provide(migrated))
    })
  )
})
