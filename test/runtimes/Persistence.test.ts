/**
 * The server's default storage is SQL: an API key created over HTTP survives a restart on PGlite on
 * disk.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { createServer } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Server from "../../runtimes/Server.ts"
import { adminKey, configFrom, workspaceId } from "../support/http.ts"

const boot = (dataDir: string) =>
  Effect.gen(function* () {
    const config = yield* configFrom({
      ACCORD_DATA_DIR: dataDir,
      ACCORD_BOOTSTRAP_WORKSPACE_ID: workspaceId,
      ACCORD_BOOTSTRAP_ADMIN_KEY: adminKey
    })
    const address = yield* Server.start(
      config,
      NodeHttpServer.layerServer(createServer, { port: 0, host: "127.0.0.1" })
    )
    if (address._tag !== "TcpAddress") return yield* Effect.dieMessage("expected a TCP address")
    return `http://127.0.0.1:${address.port}`
  })

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
            const base = yield* boot(dir)
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
            const base = yield* boot(dir)
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
