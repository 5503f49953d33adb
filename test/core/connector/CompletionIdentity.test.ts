/**
 * The one completion identity rule: "`completionId`: unique per completion, reused on redelivery".
 */
import { assert, describe, it } from "@effect/vitest"
import { completionIdentity } from "../../../core/connector/CompletionIdentity.ts"

const claim = { completionId: "cmp_1", actionRequestId: "act_1", bodyHash: "a".repeat(64) }

describe("completionIdentity", () => {
  it("a completion id never received is new", () => {
    assert.strictEqual(completionIdentity(undefined, claim), "new")
  })

  it("the same id, action and body bytes is a redelivery", () => {
    assert.strictEqual(completionIdentity(claim, { ...claim }), "duplicate")
  })

  it("the same id with another body is a conflict", () => {
    assert.strictEqual(completionIdentity(claim, { ...claim, bodyHash: "b".repeat(64) }), "conflict")
  })

  it("the same id for another action is a conflict, even with the same body", () => {
    assert.strictEqual(completionIdentity(claim, { ...claim, actionRequestId: "act_2" }), "conflict")
  })

  it("extra fields of a stored claim (its receipt time) do not matter", () => {
    assert.strictEqual(completionIdentity({ ...claim, receivedAt: 1 } as typeof claim, claim), "duplicate")
  })
})
