import { assert, describe, it } from "@effect/vitest"
import { vi } from "vitest"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import { databaseUrl, freshSchemaUrl, warnIfSkipped } from "../../support/postgres.ts"
import { cliInProcess, processTestTimeout } from "./cli.ts"

vi.setConfig({ testTimeout: processTestTimeout })

interface PrintedKey {
  id: string
  workspaceId: string
  scope: string
  secret: string
}

warnIfSkipped("accord workspace create / keys create on PostgreSQL")

describe("accord workspace create, keys create (in process)", () => {
  it.scopedLive.skipIf(databaseUrl === undefined)(
    "on DATABASE_URL: a workspace and its admin key once as JSON, then keys of each scope",
    () =>
      Effect.gen(function* () {
        const env = {
          DATABASE_URL: Redacted.value(yield* freshSchemaUrl(databaseUrl!)),
          ACCORD_MASTER_KEY: Buffer.alloc(32, 7).toString("base64")
        }
        const created = yield* cliInProcess(["workspace", "create"], { env })
        assert.strictEqual(created.code, 0, created.stderr)
        const { adminKey, workspaceId } = JSON.parse(created.stdout) as { workspaceId: string; adminKey: PrintedKey }
        assert.match(workspaceId, /^[0-9a-f-]{36}$/)
        assert.strictEqual(adminKey.scope, "admin")
        assert.match(adminKey.secret, /^acc_admin_[A-Za-z0-9_-]{43}$/)
        assert.notInclude(created.stderr, adminKey.secret)

        const [ingest, read] = yield* Effect.all(
          [
            cliInProcess(["keys", "create", "--scope", "ingest", "--workspace", workspaceId, "--name", "ci"], { env }),
            cliInProcess(["keys", "create", "--scope", "developer:read"], {
              env: { ...env, ACCORD_WORKSPACE_ID: workspaceId }
            })
          ],
          { concurrency: "unbounded" }
        )
        assert.strictEqual(ingest.code, 0, ingest.stderr)
        assert.strictEqual(read.code, 0, read.stderr)
        assert.match((JSON.parse(ingest.stdout) as PrintedKey).secret, /^acc_ingest_/)
        assert.match((JSON.parse(read.stdout) as PrintedKey).secret, /^acc_read_/)

        const [unknownWorkspace, badScope, noWorkspace] = yield* Effect.all(
          [
            cliInProcess(
              ["keys", "create", "--scope", "ingest", "--workspace", "0b4c3f4e-8e0e-4a8e-9c35-000000000000"],
              {
                env
              }
            ),
            cliInProcess(["keys", "create", "--scope", "root", "--workspace", workspaceId], { env }),
            cliInProcess(["keys", "create", "--scope", "ingest"], { env })
          ],
          { concurrency: "unbounded" }
        )
        assert.strictEqual(unknownWorkspace.code, 2)
        assert.strictEqual(
          unknownWorkspace.stderr.trim(),
          "accord: no workspace 0b4c3f4e-8e0e-4a8e-9c35-000000000000 in this storage"
        )
        assert.strictEqual(badScope.code, 2)
        assert.strictEqual(noWorkspace.code, 2)
        assert.strictEqual(noWorkspace.stderr.trim(), "accord: ACCORD_WORKSPACE_ID is required (or --workspace)")
      })
  )

  it.live(
    "on the embedded default (ACCORD_DATA_DIR): the workspace survives into the next command",
    () =>
      Effect.gen(function* () {
        const env = { ACCORD_DATA_DIR: join(mkdtempSync(join(tmpdir(), "accord-cli-data-")), "data") }
        const created = yield* cliInProcess(["workspace", "create", "--name", "owner"], { env, timeoutMs: 120_000 })
        assert.strictEqual(created.code, 0, created.stderr)
        const { workspaceId } = JSON.parse(created.stdout) as { workspaceId: string }
        const key = yield* cliInProcess(["keys", "create", "--scope", "ingest", "--workspace", workspaceId], {
          env,
          timeoutMs: 120_000
        })
        assert.strictEqual(key.code, 0, key.stderr)
        assert.strictEqual((JSON.parse(key.stdout) as PrintedKey).workspaceId, workspaceId)
      }),
    180_000
  )

  it.live("a bad configuration is one line, exit 2", () =>
    Effect.gen(function* () {
      const result = yield* cliInProcess(["workspace", "create"], { env: { DATABASE_URL: "mysql://nope" } })
      assert.strictEqual(result.code, 2)
      assert.include(result.stderr, "DATABASE_URL must be a postgres:// or postgresql:// URL")
      assert.strictEqual(result.stderr.trim().split("\n").length, 1)
    })
  )
})
