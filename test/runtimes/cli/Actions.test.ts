/**
 * `accord actions submit` and `accord actions status` as processes against the real server on
 * loopback (memory storage, the fixture catalog published, an active connection set on the store).
 */
import { join } from "node:path"
import { assert, describe, it, layer } from "@effect/vitest"
import { vi } from "vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as MemoryStorage from "../../../adapters/memory/Storage.ts"
import { intakeInput } from "../../support/deliveries.ts"
import { cipherLayer, withServices } from "../../support/storage.ts"
import { issueKey, type Service, startService } from "../../core/connector/connection/support.ts"
import { connect } from "../../core/connector/dispatch/support.ts"
import { cliInProcess, closedPort, hasStackTrace, processTestTimeout, tempFiles } from "./cli.ts"

vi.setConfig({ testTimeout: processTestTimeout })

const activeService = Effect.gen(function* () {
  const service = yield* startService()
  yield* connect("https://customer.example/accord", {
    workspaceId: service.workspaceId,
    connectionId: globalThis.crypto.randomUUID(),
    secrets: { actionSigning: Redacted.make("as_" + "5".repeat(40)), completion: Redacted.make("cs_" + "6".repeat(40)) }
  })
  return service
})

const envOf = (service: Service, key = service.adminKey) => ({
  ACCORD_SERVICE_URL: service.url,
  ACCORD_ADMIN_KEY: key,
  ACCORD_WORKSPACE_ID: service.workspaceId
})

const dir = tempFiles({
  "intake.json": JSON.stringify(intakeInput("acct_cli_1")),
  "other.json": JSON.stringify(intakeInput("acct_cli_2")),
  "list.json": JSON.stringify([intakeInput()])
})
const file = (name: string) => join(dir, name)

describe("accord actions (in process, real server on loopback)", () => {
  layer(withServices(MemoryStorage.layer).pipe(Layer.provideMerge(cipherLayer)), { excludeTestServices: true })(
    (it) => {
      it.scoped("submit prints the id and where to read it (exit 0); the same key replays it; status shows it", () =>
        Effect.gen(function* () {
          const service = yield* activeService
          const env = envOf(service)
          const first = yield* cliInProcess(
            ["actions", "submit", file("intake.json"), "--idempotency-key", "order-cli-1"],
            {
              env
            }
          )
          assert.strictEqual(first.code, 0, first.stderr)
          const id = /accepted: action request ([0-9a-f-]{36}) \(/.exec(first.stdout)?.[1]
          assert.isDefined(id, first.stdout)
          assert.include(first.stdout, "idempotency key: order-cli-1")
          assert.include(
            first.stdout,
            `GET ${service.url}/api/admin/v1/workspaces/${service.workspaceId}/action-requests/${id}`
          )
          const [again, status, fresh] = yield* Effect.all(
            [
              cliInProcess(["actions", "submit", file("intake.json"), "--idempotency-key", "order-cli-1", "--json"], {
                env
              }),
              cliInProcess(["actions", "status", id!], { env }),
              cliInProcess(["actions", "submit", file("intake.json"), "--json"], { env })
            ],
            { concurrency: "unbounded" }
          )
          assert.strictEqual(again.code, 0, again.stderr)
          const replay = JSON.parse(again.stdout)
          assert.deepStrictEqual(
            [replay.actionRequestId, replay.replayed, replay.idempotencyKey],
            [id, true, "order-cli-1"]
          )
          assert.strictEqual(status.code, 0, status.stderr)
          assert.match(status.stdout, new RegExp(`^action request ${id}: \\w+`))
          // Without --idempotency-key a fresh key is sent, and printed.
          assert.strictEqual(fresh.code, 0, fresh.stderr)
          const created = JSON.parse(fresh.stdout)
          assert.notStrictEqual(created.actionRequestId, id)
          assert.match(created.idempotencyKey, /^[0-9a-f-]{36}$/)
          assert.isFalse(created.replayed)
          assert.notInclude(first.stdout + again.stdout + status.stdout + fresh.stdout, service.adminKey)
        })
      )

      it.scoped("refusals of the action print the problem code and exit 1", () =>
        Effect.gen(function* () {
          const service = yield* activeService
          const idle = yield* startService()
          const env = envOf(service)
          assert.strictEqual(
            (yield* cliInProcess(["actions", "submit", file("intake.json"), "--idempotency-key", "order-cli-2"], {
              env
            })).code,
            0
          )
          const [reused, notActive, unknown] = yield* Effect.all(
            [
              cliInProcess(["actions", "submit", file("other.json"), "--idempotency-key", "order-cli-2"], { env }),
              cliInProcess(["actions", "submit", file("intake.json"), "--json"], { env: envOf(idle) }),
              cliInProcess(["actions", "status", globalThis.crypto.randomUUID()], { env })
            ],
            { concurrency: "unbounded" }
          )
          assert.strictEqual(reused.code, 1, reused.stderr)
          assert.match(reused.stdout, /^refused \(409 idempotency_key_reused\): /)
          assert.strictEqual(notActive.code, 1, notActive.stderr)
          assert.deepStrictEqual(
            [JSON.parse(notActive.stdout).refused.status, JSON.parse(notActive.stdout).refused.code],
            [409, "connector_not_active"]
          )
          assert.strictEqual(unknown.code, 1, unknown.stderr)
          assert.match(unknown.stdout, /^refused \(404 not_found\): /)
        })
      )

      it.scoped(
        "a missing variable, a key without admin scope, a wrong key, a file that is not one object: one line, exit 2",
        () =>
          Effect.gen(function* () {
            const service = yield* activeService
            const readKey = yield* issueKey(service, "developer:read")
            const [missing, wrongScope, unknownKey, list] = yield* Effect.all(
              [
                cliInProcess(["actions", "submit", file("intake.json")], {
                  env: { ACCORD_SERVICE_URL: service.url, ACCORD_ADMIN_KEY: service.adminKey }
                }),
                cliInProcess(["actions", "submit", file("intake.json")], { env: envOf(service, readKey) }),
                cliInProcess(["actions", "status", globalThis.crypto.randomUUID()], {
                  env: envOf(service, "acc_admin_not-a-real-key-0123456789abcdef")
                }),
                cliInProcess(["actions", "submit", file("list.json")], { env: envOf(service) })
              ],
              { concurrency: "unbounded" }
            )
            for (const [result, expected] of [
              [missing, "accord: ACCORD_WORKSPACE_ID is required (the workspace of the action)"],
              [wrongScope, "accord: ACCORD_ADMIN_KEY was refused (403): it needs an admin key of ACCORD_WORKSPACE_ID"],
              [unknownKey, "accord: ACCORD_ADMIN_KEY was refused (401): the key is unknown or revoked"],
              [
                list,
                `accord: ${file("list.json")}: not an action intake; expected one JSON object with accountId, action, actor and binding`
              ]
            ] as const) {
              assert.strictEqual(result.code, 2, result.stderr)
              assert.strictEqual(result.stderr.trim(), expected)
              assert.isFalse(hasStackTrace(result.stderr))
              assert.notInclude(result.stderr + result.stdout, readKey)
              assert.notInclude(result.stderr + result.stdout, service.adminKey)
            }
          })
      )
    }
  )

  it.live("an unreachable service: one line naming the key to submit again with, exit 2", () =>
    Effect.gen(function* () {
      const port = yield* Effect.promise(closedPort)
      const result = yield* cliInProcess(
        ["actions", "submit", file("intake.json"), "--idempotency-key", "order-cli-3"],
        {
          env: {
            ACCORD_SERVICE_URL: `http://127.0.0.1:${port}`,
            ACCORD_ADMIN_KEY: "acc_admin_not-a-real-key-0123456789abcdef",
            ACCORD_WORKSPACE_ID: "w"
          }
        }
      )
      assert.strictEqual(result.code, 2)
      assert.strictEqual(
        result.stderr.trim(),
        `accord: cannot reach the service at http://127.0.0.1:${port} (network_error); submit again with --idempotency-key order-cli-3`
      )
      assert.isFalse(hasStackTrace(result.stderr))
    })
  )

  it.live("--help on actions, actions submit and actions status", () =>
    Effect.gen(function* () {
      const results = yield* Effect.all(
        [["actions"], ["actions", "submit"], ["actions", "status"]].map((path) => cliInProcess([...path, "--help"])),
        {
          concurrency: "unbounded"
        }
      )
      for (const result of results) {
        assert.strictEqual(result.code, 0, result.stderr)
        assert.include(result.stdout, "USAGE")
      }
      assert.include(results[1]!.stdout, "--idempotency-key")
    })
  )
})
