import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Unrouted from "../../../adapters/http/Unrouted.ts"

const ok = Effect.succeed(HttpServerResponse.empty())
const admin = HttpRouter.empty.pipe(
  HttpRouter.post("/things", ok),
  HttpRouter.get("/things/:id", ok),
  HttpRouter.del("/things/:id", ok)
)
const router = HttpRouter.empty.pipe(
  HttpRouter.get("/healthz", ok),
  HttpRouter.post("/ingest", ok),
  HttpRouter.mount("/admin/:workspaceId", admin)
)

describe("Unrouted", () => {
  it("lists the methods of a known path, through mounts with parameters, ignoring the query string", () => {
    assert.deepStrictEqual(Unrouted.allowedMethods(router, "/healthz"), ["GET"])
    assert.deepStrictEqual(Unrouted.allowedMethods(router, "/ingest?a=1"), ["POST"])
    assert.deepStrictEqual(Unrouted.allowedMethods(router, "/admin/w1/things"), ["POST"])
    assert.deepStrictEqual(Unrouted.allowedMethods(router, "/admin/w1/things/t1"), ["DELETE", "GET"])
  })

  it("an unknown path has none", () => {
    assert.deepStrictEqual(Unrouted.allowedMethods(router, "/nope"), [])
    assert.deepStrictEqual(Unrouted.allowedMethods(router, "/admin/w1"), [])
    assert.deepStrictEqual(Unrouted.allowedMethods(router, "/admin/w1/things/t1/more"), [])
    assert.deepStrictEqual(Unrouted.allowedMethods(router, "/healthz/x"), [])
  })

  it("answers 405 with Allow for a known path, 404 otherwise", () => {
    const wrong = Unrouted.problem(router, "PUT", "/admin/w1/things/t1")
    assert.strictEqual(wrong.status, 405)
    assert.strictEqual(wrong.code, "method_not_allowed")
    assert.deepStrictEqual(wrong.headers, { allow: "DELETE, GET" })
    assert.strictEqual(Unrouted.problem(router, "GET", "/nope").status, 404)
  })
})
