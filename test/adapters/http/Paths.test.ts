/**
 * The request target check: path segments must be UTF-8 identifiers, query names and values
 * UTF-8 text without NUL; everything else passes untouched.
 */
import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import { targetProblem } from "../../../adapters/http/Paths.ts"

describe("targetProblem", () => {
  it("passes ordinary targets", () => {
    for (const url of [
      "/healthz",
      "/api/admin/v1/workspaces/w/accounts/acct_1?limit=10&cursor=a%20b",
      "/a/%C3%A9?q=%E2%9C%93+x",
      "/x?flag"
    ]) {
      assert.isUndefined(targetProblem(url), url)
    }
  })

  it("refuses a NUL in a path segment", () => assert.strictEqual(targetProblem("/accounts/a%00b"), "invalid_path"))
  it("refuses invalid UTF-8 in a path segment", () =>
    assert.strictEqual(targetProblem("/accounts/%FF"), "invalid_path"))
  it("refuses a malformed escape in a path segment", () =>
    assert.strictEqual(targetProblem("/accounts/%G1"), "invalid_path"))
  it("refuses an encoded surrogate in a path segment", () =>
    assert.strictEqual(targetProblem("/accounts/%ED%A0%80"), "invalid_path"))
  it("refuses a bidi control in a path segment", () =>
    assert.strictEqual(targetProblem("/accounts/a%E2%80%AEb"), "invalid_path"))
  it("refuses a NUL in a query value", () =>
    assert.strictEqual(targetProblem("/events?account_id=%00"), "invalid_query"))
  it("refuses a NUL in a query name", () => assert.strictEqual(targetProblem("/events?a%00=1"), "invalid_query"))
  it("refuses invalid UTF-8 in a query value", () =>
    assert.strictEqual(targetProblem("/events?a=%C3"), "invalid_query"))

  it.prop(
    "any percent-encoded identifier segment passes",
    [
      fc
        .string({ unit: "grapheme", minLength: 1, maxLength: 20 })
        .map((s) => s.replace(/[^\p{L}\p{N}_.-]/gu, "") || "x")
    ],
    ([id]) => {
      assert.isUndefined(targetProblem(`/accounts/${encodeURIComponent(id)}?account_id=${encodeURIComponent(id)}`))
    }
  )
})
