/**
 * The customer endpoint's error answers: shape errors name the failing paths, a body that is not
 * JSON is `malformed_body`, storage is 503, every signature failure is 401 with its snake_case code.
 */
import { assert, describe, it } from "@effect/vitest"
import { errorResponse, verificationResponse } from "../../../../core/customer/internal/endpoint.ts"
import { StorageError } from "../../../../core/ports/StorageError.ts"
import { MalformedBody } from "../../../../core/protocol/Json.ts"
import { InvalidShape, InvalidSignature, ReplayedNonce } from "../../../../core/protocol/Verification.ts"

const decoded = (response: { readonly body: Uint8Array }): unknown =>
  JSON.parse(new TextDecoder().decode(response.body))

describe("errorResponse", () => {
  it("is a JSON body with the status", () => {
    const response = errorResponse(409, { error: "conflict" })
    assert.deepStrictEqual(
      [response.status, response.headers, decoded(response)],
      [409, { "content-type": "application/json" }, { error: "conflict" }]
    )
  })
})

describe("verificationResponse", () => {
  it("maps each failure to its status and code", () => {
    const cases: ReadonlyArray<readonly [Parameters<typeof verificationResponse>[0], number, unknown]> = [
      [new InvalidShape({ issues: [] }), 400, { error: "invalid_body", issues: [] }],
      [new MalformedBody(), 400, { error: "malformed_body" }],
      [new StorageError({ operation: "nonce.claim", message: "down" }), 503, { error: "storage_unavailable" }],
      [new InvalidSignature({ reason: "mismatch" }), 401, { error: "invalid_signature" }],
      [new ReplayedNonce(), 401, { error: "replayed_nonce" }]
    ]
    for (const [error, status, body] of cases) {
      const response = verificationResponse(error)
      assert.deepStrictEqual([response.status, decoded(response)], [status, body])
    }
  })
})
