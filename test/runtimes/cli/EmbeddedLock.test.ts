/**
 * One writer per embedded database, as the server and the CLI meet it: while a server runs on a
 * PGlite data directory, a second server there stops at start, `keys create` refuses with the fix
 * in one line or, given the server's URL and an admin key, creates the key through the server's API
 * (and that key works), and `workspace create` refuses; once the server stopped, the CLI opens the
 * directory itself.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Scope from "effect/Scope"
import * as Exit from "effect/Exit"
import { vi } from "vitest"
import { adminKey, startOnDisk, workspaceId } from "../../support/http.ts"
import { cliInProcess, processTestTimeout } from "./cli.ts"

vi.setConfig({ testTimeout: processTestTimeout })

interface PrintedKey {
  readonly id: string
  readonly workspaceId: string
  readonly scope: string
  readonly secret: string
}

const keysStatus = (base: string, secret: string) =>
  Effect.promise(() =>
    fetch(`${base}/api/admin/v1/workspaces/${workspaceId}/api-keys`, {
      headers: { authorization: `Bearer ${secret}` }
    }).then((response) => response.status)
  )

describe("one writer per embedded database: the server and the CLI", () => {
  it.live("while the server runs, the CLI refuses or goes through its API; once it stopped, the CLI opens it", () =>
    Effect.gen(function* () {
      const dir = mkdtempSync(join(tmpdir(), "accord-cli-lock-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      const env = { ACCORD_DATA_DIR: dir }
      const pglite = join(dir, "pglite")

      const serverScope = yield* Scope.make()
      const base = yield* startOnDisk(dir).pipe(Scope.extend(serverScope))

      // A second server on the same directory stops at start, naming the one that holds it.
      const second = yield* Effect.exit(Effect.scoped(startOnDisk(dir)))
      assert.isTrue(Exit.isFailure(second))
      assert.include(
        String(Exit.isFailure(second) ? second.cause : ""),
        `the embedded database in ${pglite} is open in process ${process.pid}`
      )

      // Without the server's URL and an admin key: refused, one line, with the fix.
      const refused = yield* cliInProcess(["keys", "create", "--scope", "ingest", "--workspace", workspaceId], { env })
      assert.strictEqual(refused.code, 2)
      assert.strictEqual(refused.stdout, "")
      assert.strictEqual(
        refused.stderr.trim(),
        `accord: the embedded database in ${pglite} is open in process ${process.pid} (a running Accord server?): ` +
          "set ACCORD_SERVICE_URL and ACCORD_ADMIN_KEY (an admin key) to create the key through its API, or stop it first"
      )

      // A workspace is never created beside a running server.
      const workspace = yield* cliInProcess(["workspace", "create"], {
        env: { ...env, ACCORD_SERVICE_URL: base, ACCORD_ADMIN_KEY: adminKey }
      })
      assert.strictEqual(workspace.code, 2)
      assert.include(workspace.stderr, `the embedded database in ${pglite} is open in process ${process.pid}`)
      assert.include(workspace.stderr, "stop it, then run this again")
      assert.strictEqual(workspace.stderr.trim().split("\n").length, 1)

      // With them: the key is created by the running server, and it authenticates there.
      const through = yield* cliInProcess(
        ["keys", "create", "--scope", "admin", "--workspace", workspaceId, "--name", "through the API"],
        { env: { ...env, ACCORD_SERVICE_URL: base, ACCORD_ADMIN_KEY: adminKey } }
      )
      assert.strictEqual(through.code, 0, through.stderr)
      const key = JSON.parse(through.stdout) as PrintedKey
      assert.strictEqual(key.workspaceId, workspaceId)
      assert.strictEqual(key.scope, "admin")
      assert.match(key.secret, /^acc_admin_/)
      assert.strictEqual(yield* keysStatus(base, key.secret), 200)

      // A wrong admin key: the server's refusal, one line, nothing created.
      const wrongKey = yield* cliInProcess(["keys", "create", "--scope", "ingest", "--workspace", workspaceId], {
        env: { ...env, ACCORD_SERVICE_URL: base, ACCORD_ADMIN_KEY: "acc_admin_not-a-key-of-this-server-000000000000" }
      })
      assert.strictEqual(wrongKey.code, 2)
      assert.match(wrongKey.stderr.trim(), /^accord: the service at http:\/\/127\.0\.0\.1:\d+ refused the key \(401 /)
      assert.notInclude(wrongKey.stderr, "not-a-key-of-this-server")

      // The server stopped: the directory is free, and the CLI writes it itself (the key made
      // through the API is in it, so it was never a copy).
      yield* Scope.close(serverScope, Exit.void)
      const direct = yield* cliInProcess(["keys", "create", "--scope", "ingest", "--workspace", workspaceId], {
        env,
        timeoutMs: 120_000
      })
      assert.strictEqual(direct.code, 0, direct.stderr)
      assert.match((JSON.parse(direct.stdout) as PrintedKey).secret, /^acc_ingest_/)
      const restarted = yield* startOnDisk(dir)
      assert.strictEqual(yield* keysStatus(restarted, key.secret), 200)
    }).pipe(Effect.scoped)
  )
})
