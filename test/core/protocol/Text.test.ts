/**
 * Text that cannot be stored (U+0000, unpaired surrogates) is refused at the door, at any depth,
 * in names and values; well-formed text, escaped surrogate pairs included, passes.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Either from "effect/Either"
import * as fc from "fast-check"
import { prepareEvent } from "../../../core/ingest/Ingest.ts"
import { isStorableText, unstorableTextIssues } from "../../../core/protocol/Text.ts"

const now = Date.UTC(2026, 10, 20, 12)
const event = (overrides: Record<string, unknown>) => ({
  event_name: "feature_used",
  account_id: "acct_1",
  timestamp: new Date(now - 60_000).toISOString(),
  event_id: "feature_used:1",
  ...overrides
})

describe("unstorable text", () => {
  it("NUL and unpaired surrogates are unstorable; pairs and ordinary text are fine", () => {
    assert.isTrue(isStorableText("plain text, ünïcode, 日本"))
    assert.isTrue(isStorableText("emoji \ud83d\ude00 as a pair"))
    assert.isFalse(isStorableText("nul \u0000 inside"))
    assert.isFalse(isStorableText("high \ud800 alone"))
    assert.isFalse(isStorableText("low \udc00 alone"))
    assert.isFalse(isStorableText("\udc00\ud800"))
  })

  it.prop(
    "any well-formed string without NUL is storable; adding a NUL makes it unstorable",
    [fc.string({ unit: "grapheme" })],
    ([text]) => {
      const clean = text.replaceAll("\u0000", "")
      assert.isTrue(isStorableText(clean))
      assert.isFalse(isStorableText(clean + "\u0000"))
    }
  )

  it("every place is named, at any depth, in names and values, without the unstorable name itself", () => {
    const body = { a: "ok", b: ["x", "bad\u0000"], c: { "d\ud800": { e: "\udc00" } } }
    assert.deepStrictEqual(
      unstorableTextIssues(body)
        .map((i) => i.path)
        .sort(),
      ["b.1", "c.<unstorable name>", "c.<unstorable name>.e"]
    )
    let deep: unknown = "\u0000"
    for (let i = 0; i < 50_000; i++) deep = [deep]
    assert.strictEqual(unstorableTextIssues(deep).length, 1)
  })

  it("an event carrying unstorable text anywhere is refused with the path, whatever else it carries", () => {
    for (const [overrides, path] of [
      [{ properties: { plan: "pro\u0000" } }, "properties.plan"],
      [{ account_id: "acct_\ud800" }, "account_id"],
      [{ user_id: "u1", user: { email: "a\u0000@example.com" } }, "user.email"],
      [{ properties: { "bad\udc00": 1 } }, "properties.<unstorable name>"]
    ] as const) {
      const prepared = prepareEvent(event(overrides), { id: "id", workspaceId: "ws", now })
      assert.isTrue(Either.isLeft(prepared), path)
      if (Either.isLeft(prepared)) {
        assert.include(
          (prepared.left as unknown as { issues: ReadonlyArray<{ path: string }> }).issues.map((i) => i.path),
          path
        )
      }
    }
    assert.isTrue(
      Either.isRight(
        prepareEvent(event({ properties: { tier_label: "gold \ud83d\ude00" } }), { id: "id", workspaceId: "ws", now })
      )
    )
  })
})
