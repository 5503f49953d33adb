/**
 * The examples of the API declaration are real: every request example decodes with the very
 * Schema its route decodes with (so a reader's copy of it is accepted), every answer example
 * decodes with its answer's Schema, and every problem example is what `Problem.toAnswer` writes.
 * The documented Direct API event, declared apart from the ingestion rules, is accepted by the
 * server as documented.
 */
import { assert, describe, it } from "@effect/vitest"
import * as HttpApi from "@effect/platform/HttpApi"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as TestClock from "effect/TestClock"
import * as AST from "effect/SchemaAST"
import * as Api from "../../../../adapters/http/api/Api.ts"
import * as ApiKeysApi from "../../../../adapters/http/api/ApiKeysApi.ts"
import * as IngestApi from "../../../../adapters/http/api/IngestApi.ts"
import { adminKey, request, startServer, workspaceId } from "../../../support/http.ts"

const examplesOf = (ast: AST.AST): ReadonlyArray<unknown> => {
  const own = Option.getOrElse(AST.getExamplesAnnotation(ast), () => [])
  return own.length > 0 ? own : AST.isUnion(ast) ? ast.types.flatMap(examplesOf) : []
}

const endpoints = () => {
  const found: Array<{
    readonly name: string
    readonly payload: Option.Option<AST.AST>
    readonly answers: ReadonlyArray<AST.AST>
  }> = []
  HttpApi.reflect(Api.api, {
    onGroup: () => {},
    onEndpoint: ({ endpoint, errors, successes }) => {
      found.push({
        name: `${endpoint.method} ${endpoint.path}`,
        payload: Option.map(endpoint.payloadSchema, (schema) => schema.ast),
        answers: [...successes.values(), ...errors.values()].flatMap(({ ast }) => Option.toArray(ast))
      })
    }
  })
  return found
}

describe("API declaration examples", () => {
  it("every request example decodes with its route's Schema", () => {
    const refused: Array<string> = []
    let checked = 0
    for (const { name, payload } of endpoints()) {
      if (Option.isNone(payload)) continue
      const decode = Schema.decodeUnknownEither(Schema.make(payload.value), { onExcessProperty: "error" })
      for (const example of examplesOf(payload.value)) {
        checked++
        const result = decode(example)
        if (result._tag === "Left") refused.push(`${name}: ${result.left.message}`)
      }
    }
    assert.deepStrictEqual(refused, [])
    assert.isAtLeast(checked, 7)
  })

  it("every answer example, successes and problems, decodes with its answer's Schema", () => {
    const refused: Array<string> = []
    let checked = 0
    for (const { answers, name } of endpoints()) {
      for (const ast of answers) {
        for (const declared of AST.isUnion(ast) ? ast.types : [ast]) {
          // A declared error is answered as its problem document (the transformation's encoded side).
          const member = AST.isTransformation(declared) ? declared.from : declared
          const decode = Schema.decodeUnknownEither(Schema.make(member), { onExcessProperty: "error" })
          for (const example of examplesOf(member)) {
            checked++
            const result = decode(example)
            if (result._tag === "Left") refused.push(`${name}: ${result.left.message}`)
          }
        }
      }
    }
    assert.deepStrictEqual(refused, [])
    assert.isAtLeast(checked, 60)
  })
})

describe("API declaration examples over HTTP", () => {
  it.scoped("the Direct API's documented event is accepted as documented (202, then 200 duplicate)", () =>
    Effect.gen(function* () {
      // the server's clock just after the example's timestamp (2026-11-22T10:15:30Z)
      yield* TestClock.setTime(Date.UTC(2026, 10, 22, 10, 20))
      const { url } = yield* startServer()
      const key = yield* request(`${url}/api/admin/v1/workspaces/${workspaceId}/api-keys`, {
        method: "POST",
        headers: { authorization: `Bearer ${adminKey}`, "content-type": "application/json" },
        body: JSON.stringify(examplesOf(ApiKeysApi.CreateApiKeyBody.ast)[0])
      })
      assert.strictEqual(key.status, 201, key.text)
      const send = () =>
        request(`${url}${IngestApi.ingestEvent.path}`, {
          method: "POST",
          headers: { authorization: `Bearer ${key.json.secret}`, "content-type": "application/json" },
          body: JSON.stringify(examplesOf(IngestApi.IngestEvent.ast)[0])
        })
      const first = yield* send()
      assert.strictEqual(first.status, 202, first.text)
      assert.deepStrictEqual(Object.keys(first.json).sort(), ["account_id", "duplicate", "event_id", "id", "status"])
      const again = yield* send()
      assert.strictEqual(again.status, 200, again.text)
      assert.strictEqual(again.json.status, "duplicate")
    })
  )
})
