/**
 * `accord events sweep` on PostgreSQL: one retention sweep of the configured storage, what it did
 * printed as JSON (exit 0); a bad `ACCORD_EVENT_RETENTION_DAYS` is a configuration error (exit 2)
 * that names the variable.
 */
import { assert, describe, it } from "@effect/vitest"
import { vi } from "vitest"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import { databaseUrl, freshSchemaUrl, warnIfSkipped } from "../../support/postgres.ts"
import { cliInProcess, processTestTimeout } from "./cli.ts"

vi.setConfig({ testTimeout: processTestTimeout })

warnIfSkipped("accord events sweep on PostgreSQL")

describe("accord events sweep (in process)", () => {
  it.scopedLive.skipIf(databaseUrl === undefined)("sweeps once and prints what it did as JSON", () =>
    Effect.gen(function* () {
      const env = {
        DATABASE_URL: Redacted.value(yield* freshSchemaUrl(databaseUrl!)),
        ACCORD_MASTER_KEY: Buffer.alloc(32, 7).toString("base64")
      }
      const swept = yield* cliInProcess(["events", "sweep"], { env: { ...env, ACCORD_EVENT_RETENTION_DAYS: "30" } })
      assert.strictEqual(swept.code, 0, swept.stderr)
      // A fresh schema's migration prepared the months ahead already: nothing to create or drop.
      assert.deepStrictEqual(JSON.parse(swept.stdout), {
        createdPartitions: [],
        droppedPartitions: [],
        deletedEvents: 0,
        deletedKeys: 0
      })
      const refused = yield* cliInProcess(["events", "sweep"], {
        env: { ...env, ACCORD_EVENT_RETENTION_DAYS: "a year" }
      })
      assert.strictEqual(refused.code, 2)
      assert.include(refused.stderr, "ACCORD_EVENT_RETENTION_DAYS")
      assert.strictEqual(refused.stdout, "")
    })
  )
})
