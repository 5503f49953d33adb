import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as NodeCrypto from "../../../adapters/crypto/NodeCrypto.ts"
import { adminOnly, adminOrDeveloper, guarded } from "../../../adapters/http/Auth.ts"
import { adminWorkspacePath } from "../../../adapters/http/Paths.ts"
import * as Problem from "../../../adapters/http/Problem.ts"
import { issue } from "../../../core/access/ApiKeys.ts"
import type * as ApiKeyStore from "../../../core/ports/ApiKeyStore.ts"
import * as MemoryApiKeyStore from "../../../adapters/memory/ApiKeyStore.ts"

const workspaceId = "0b7f3a52-6c1e-4d8a-9f2b-3e5c7a9d1f20"
const otherWorkspaceId = "7d1c2b3a-4e5f-4a6b-8c7d-9e0f1a2b3c4d"

/** Two routes under the admin workspace path, one per scope set, answering the guarded workspace. */
const app = Effect.flatten(
  HttpRouter.toHttpApp(
    HttpRouter.empty.pipe(
      HttpRouter.mount(
        adminWorkspacePath,
        HttpRouter.empty.pipe(
          HttpRouter.post(
            "/write",
            guarded(adminOnly)((id) => HttpServerResponse.json({ workspaceId: id }))
          ),
          HttpRouter.get(
            "/read/:id",
            guarded(adminOrDeveloper)((id) =>
              Effect.map(HttpRouter.params, (params) =>
                HttpServerResponse.unsafeJson({ workspaceId: id, id: params["id"] })
              )
            )
          )
        )
      )
    )
  )
)

const call = (method: string, path: string, secret?: string) =>
  app.pipe(
    Effect.catchTag("Problem", (problem) => Effect.succeed(Problem.toResponse(problem))),
    Effect.provideService(
      HttpServerRequest.HttpServerRequest,
      HttpServerRequest.fromWeb(
        new Request(`http://localhost/api/admin/v1/workspaces/${path}`, {
          method,
          headers: secret === undefined ? {} : { authorization: `Bearer ${secret}` }
        })
      )
    ),
    Effect.flatMap((response) =>
      Effect.promise(async () => {
        const web = HttpServerResponse.toWeb(response)
        return { status: web.status, body: (await web.json()) as Record<string, unknown> }
      })
    )
  )

const keyOf = (workspace: string, scope: ApiKeyStore.ApiKeyScope) =>
  Effect.map(issue({ workspaceId: workspace, scope, name: null }), ({ secret }) => Redacted.value(secret))

const services = Layer.merge(MemoryApiKeyStore.layerMemory, NodeCrypto.layer)

describe("the admin guard under the admin workspace path", () => {
  it.effect("hands the path's workspace (and the route's own params) to the handler", () =>
    Effect.gen(function* () {
      const admin = yield* keyOf(workspaceId, "admin")
      assert.deepStrictEqual(yield* call("POST", `${workspaceId}/write`, admin), { status: 200, body: { workspaceId } })
      assert.deepStrictEqual(yield* call("GET", `${workspaceId}/read/abc`, admin), {
        status: 200,
        body: { workspaceId, id: "abc" }
      })
    }).pipe(Effect.provide(services))
  )

  it.effect("lets a developer:read key read, not write", () =>
    Effect.gen(function* () {
      const reader = yield* keyOf(workspaceId, "developer:read")
      assert.strictEqual((yield* call("GET", `${workspaceId}/read/abc`, reader)).status, 200)
      const refused = yield* call("POST", `${workspaceId}/write`, reader)
      assert.strictEqual(refused.status, 403)
      assert.strictEqual(refused.body["detail"], "this route needs a key with scope admin")
    }).pipe(Effect.provide(services))
  )

  it.effect("refuses no key (401), and a key of another workspace or scope (403)", () =>
    Effect.gen(function* () {
      assert.strictEqual((yield* call("GET", `${workspaceId}/read/abc`)).status, 401)
      const foreign = yield* keyOf(otherWorkspaceId, "admin")
      const other = yield* call("GET", `${workspaceId}/read/abc`, foreign)
      assert.strictEqual(other.status, 403)
      assert.strictEqual(other.body["detail"], "the API key does not belong to this workspace")
      const ingest = yield* keyOf(workspaceId, "ingest")
      const wrongScope = yield* call("GET", `${workspaceId}/read/abc`, ingest)
      assert.strictEqual(wrongScope.status, 403)
      assert.strictEqual(wrongScope.body["detail"], "this route needs a key with scope admin or developer:read")
    }).pipe(Effect.provide(services))
  )
})
