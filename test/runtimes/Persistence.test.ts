/**
 * The server's default storage is SQL: an API key created over HTTP survives a restart on PGlite on
 * disk.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { adminKey, startOnDisk, workspaceId } from "../support/http.ts"

const keysUrl = (base: string) => `${base}/api/admin/v1/workspaces/${workspaceId}/api-keys`

describe("default SQL storage", () => {
  it.live(
    "an API key created before a restart still authenticates after it (PGlite on disk)",
    () =>
      Effect.gen(function* () {
        const dir = mkdtempSync(join(tmpdir(), "accord-persist-"))
        yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
        const secret = yield* Effect.scoped(
          Effect.gen(function* () {
            const base = yield* startOnDisk(dir)
            const created = yield* Effect.promise(() =>
              fetch(keysUrl(base), {
                method: "POST",
                headers: { authorization: `Bearer ${adminKey}`, "content-type": "application/json" },
                body: JSON.stringify({ scope: "admin", name: "second admin" })
              }).then((r) => r.json() as Promise<{ secret: string }>)
            )
            return created.secret
          })
        )
        const status = yield* Effect.scoped(
          Effect.gen(function* () {
            const base = yield* startOnDisk(dir)
            return yield* Effect.promise(() =>
              fetch(keysUrl(base), { headers: { authorization: `Bearer ${secret}` } }).then((r) => r.status)
            )
          })
        )
        assert.strictEqual(status, 200)
      }).pipe(Effect.scoped),
    60_000
  )
})
