/**
 * Request spans on the real server: with a tracer that records spans installed by the host (here a
 * recording wrapper of Effect's own), every request gets one `http.server <METHOD>` span carrying
 * the method, the route template and the status, never the path's ids; with Effect's own tracer
 * alone the app is served without making them (`HttpTracing.tracedWhenRecorded`).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Tracer from "effect/Tracer"
import { tracedWhenRecorded } from "../../../adapters/telemetry/HttpTracing.ts"
import { request } from "../../support/http.ts"
import { bootService } from "../../e2e/support.ts"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"

/** Effect's own tracer, recording the name and attributes of every span it makes. */
const recording = (native: Tracer.Tracer) => {
  const spans: Array<Tracer.Span> = []
  const tracer = Tracer.make({
    span: (name, parent, context, links, startTime, kind, options) => {
      const span = native.span(name, parent, context, links, startTime, kind, options)
      spans.push(span)
      return span
    },
    context: (f, fiber) => native.context(f, fiber)
  })
  return { spans, tracer }
}

describe("request spans", () => {
  it.scoped("a host's recording tracer gets one span per request: method, route template and status, no ids", () =>
    Effect.gen(function* () {
      const { spans, tracer } = recording(yield* Effect.tracer)
      const service = yield* Effect.withTracer(bootService(), tracer)
      const accountId = "acct_span_1"
      const reply = yield* request(`${service.ws}/accounts/${accountId}`, {
        headers: { authorization: "Bearer x".padEnd(40, "x") }
      })
      assert.strictEqual(reply.status, 401)
      const server = spans.filter((span) => span.name.startsWith("http.server "))
      assert.isAtLeast(server.length, 1, spans.map((span) => span.name).join(", "))
      const last = server.at(-1)!
      assert.strictEqual(last.name, "http.server GET")
      assert.strictEqual(last.attributes.get("http.request.method"), "GET")
      assert.strictEqual(last.attributes.get("http.response.status_code"), 401)
      assert.strictEqual(last.attributes.get("http.route"), "/api/admin/v1/workspaces/:workspaceId/accounts/:accountId")
      for (const value of last.attributes.values()) assert.notInclude(String(value), accountId)
    })
  )

  it.effect("under Effect's own tracer the app is served as it is; under another it is wrapped in the span", () =>
    Effect.gen(function* () {
      const app = Effect.succeed(HttpServerResponse.empty())
      assert.strictEqual(yield* tracedWhenRecorded(app), app)
      const { tracer } = recording(yield* Effect.tracer)
      const wrapped = yield* Effect.withTracer(tracedWhenRecorded(app), tracer)
      assert.notStrictEqual(wrapped, app)
    })
  )
})
