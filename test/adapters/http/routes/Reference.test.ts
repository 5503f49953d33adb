/**
 * The API reference over real HTTP: `GET /openapi.json` is the document generated
 * from the `HttpApi` declaration, it validates (`@apidevtools/swagger-parser`) and documents exactly
 * the routes the app serves (`scripts/check-openapi-routes.ts`, the check of `npm run
 * check:openapi`); every request and success body has an example and every error its problem codes;
 * `GET /reference` renders it as HTML with no script and no inline style, under a CSP without
 * `unsafe-inline`.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Api from "../../../../adapters/http/api/Api.ts"
import * as App from "../../../../adapters/http/App.ts"
import { checkDocument, documentedRoutes, withoutRetryAfter } from "../../../../scripts/check-openapi-routes.ts"
import { request, startServer } from "../../../support/http.ts"

type Json = Record<string, any>

const options = { maxBodyBytes: 65_536, rateLimitPerSecond: 100, allowInsecureEndpoints: false }

/** Follows a local `$ref`. */
const resolve = (document: Json, schema: Json): Json =>
  typeof schema["$ref"] === "string"
    ? resolve(
        document,
        schema["$ref"]
          .slice(2)
          .split("/")
          .reduce((node: any, key: string) => node[key], document)
      )
    : schema

const hasExamples = (document: Json, schema: Json): boolean => {
  const resolved = resolve(document, schema)
  const union = resolved["anyOf"] ?? resolved["oneOf"]
  return (
    (Array.isArray(resolved["examples"]) && resolved["examples"].length > 0) ||
    (Array.isArray(union) && union.every((member: Json) => hasExamples(document, member)))
  )
}

const operations = (document: Json) =>
  Object.entries<Json>(document["paths"]).flatMap(([path, item]) =>
    Object.entries<Json>(item).map(([method, op]) => ({ path, method, op }))
  )

describe("API reference", () => {
  it.scoped("GET /openapi.json: the generated document, valid, naming exactly the routes served", () =>
    Effect.gen(function* () {
      const { url } = yield* startServer()
      const reply = yield* request(`${url}/openapi.json`)
      assert.strictEqual(reply.status, 200)
      assert.strictEqual(reply.headers.get("content-type"), "application/json")
      assert.deepStrictEqual(reply.json, JSON.parse(JSON.stringify(Api.document)))
      const problems = yield* Effect.promise(() => checkDocument(reply.json, App.router(options)))
      assert.deepStrictEqual(problems, [])
      assert.strictEqual(reply.json.openapi, "3.1.0")
      assert.include(reply.json.info.description, "camelCase")
      assert.include(reply.json.info.description, "snake_case")
      assert.deepStrictEqual(Object.keys(reply.json.components.securitySchemes), ["apiKey", "runtimeToken"])
      assert.deepStrictEqual(reply.json.components.securitySchemes.apiKey.scheme, "bearer")
      assert.deepStrictEqual(reply.json.components.securitySchemes.runtimeToken.scheme, "bearer")
    })
  )

  it("every body has a schema and an example; every error is a problem with its codes", () => {
    const document = JSON.parse(JSON.stringify(Api.document)) as Json
    const missing: Array<string> = []
    for (const { method, op, path } of operations(document)) {
      const where = `${method.toUpperCase()} ${path}`
      for (const [mediaType, media] of Object.entries<Json>(op.requestBody?.content ?? {})) {
        if (!hasExamples(document, media["schema"])) missing.push(`${where} request ${mediaType}`)
      }
      for (const [status, response] of Object.entries<Json>(op.responses)) {
        for (const [mediaType, media] of Object.entries<Json>(response["content"] ?? {})) {
          if (Number(status) >= 400) {
            if (mediaType !== "application/problem+json") missing.push(`${where} ${status} is ${mediaType}`)
            const schema = resolve(document, media["schema"])
            const members = (schema["anyOf"] ?? [schema]).map((member: Json) => resolve(document, member))
            for (const member of members) {
              if (!Array.isArray(member.properties?.code?.enum))
                missing.push(`${where} ${status} without problem codes`)
              if (member.properties?.status?.enum?.[0] !== Number(status))
                missing.push(`${where} ${status} with another status`)
            }
          } else if (mediaType === "application/json" && !hasExamples(document, media["schema"])) {
            missing.push(`${where} ${status} response`)
          }
        }
      }
      const admin = path.startsWith("/api/admin/") || path === "/api/events/ingest"
      if (admin && JSON.stringify(op.security) !== JSON.stringify([{ apiKey: [] }]))
        missing.push(`${where} without the bearer security`)
      if (admin && op.responses["401"] === undefined) missing.push(`${where} without 401`)
    }
    assert.deepStrictEqual(missing, [])
    // the admin routes are there, the lists included
    const routes = documentedRoutes(Api.document)
    for (const route of [
      "GET /accounts",
      "GET /action-requests",
      "GET /feature-gates",
      "POST /action-requests",
      "PUT /connector"
    ]) {
      assert.include(routes, route.replace(" /", " /api/admin/v1/workspaces/{workspaceId}/"))
    }
    assert.include(routes, "POST /api/funnels/v1/runtime/actions/customer-complete")
    assert.include(routes, "POST /api/events/ingest")
  })

  it("every 503 and 429 answer documents its Retry-After header, and the check finds one that does not", () => {
    const document = JSON.parse(JSON.stringify(Api.document)) as Json
    const retryable = operations(document).flatMap(({ method, op, path }) =>
      ["503", "429"]
        .filter((status) => op.responses[status] !== undefined)
        .map((status) => ({ method, op, path, status }))
    )
    // storage's 503 on every admin route, the probes', the runtime routes' 429 and the ingest key's
    assert.isAtLeast(retryable.length, 30)
    for (const { op, status } of retryable) {
      assert.deepStrictEqual(op.responses[status].headers["retry-after"], {
        description: "whole seconds to wait before sending the same request again",
        required: true,
        schema: { type: "string", pattern: "^[0-9]+$" }
      })
    }
    assert.deepStrictEqual(withoutRetryAfter(document as never), [])
    const first = retryable[0]!
    delete first.op.responses[first.status].headers["retry-after"]
    assert.deepStrictEqual(withoutRetryAfter(document as never), [
      `${first.method.toUpperCase()} ${first.path} ${first.status}`
    ])
  })

  it.scoped("GET /reference: the document as HTML, no script, no inline style, CSP without unsafe-inline", () =>
    Effect.gen(function* () {
      const { url } = yield* startServer()
      const page = yield* request(`${url}/reference`)
      assert.strictEqual(page.status, 200)
      assert.strictEqual(page.headers.get("content-type"), "text/html; charset=utf-8")
      const csp = page.headers.get("content-security-policy") ?? ""
      assert.include(csp, "default-src 'none'")
      assert.include(csp, "style-src 'self'")
      assert.notInclude(csp, "unsafe-inline")
      assert.notInclude(csp, "script-src")
      assert.notMatch(page.text, /<script/i)
      assert.notMatch(page.text, /\sstyle=|<style/i)
      assert.notMatch(page.text, /\son[a-z]+=/i)
      assert.notMatch(page.text, /(src|href)="(https?:)?\/\//i)
      for (const path of Object.keys(Api.document.paths)) {
        assert.include(page.text, path.replaceAll("&", "&amp;"), path)
      }
      assert.include(page.text, "idempotency_key_reused")
      assert.include(page.text, "extend_trial")
      const css = yield* request(`${url}/reference/reference.css`)
      assert.strictEqual(css.status, 200)
      assert.strictEqual(css.headers.get("content-type"), "text/css; charset=utf-8")
    })
  )
})
