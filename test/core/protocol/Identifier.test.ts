/**
 * The one identifier rule: any identifier holding a control, bidi, zero-width or unpaired
 * surrogate character is refused; ordinary identifiers (any script, emoji pairs) pass.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import * as fc from "fast-check"
import { Identifier, isSafeIdentifier } from "../../../core/protocol/Identifier.ts"

const forbidden = [
  ..."\u0000\u0001\u001f\u007f\u0080\u0085\u009f",
  ..."\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c",
  ..."\u200b\u200c\u200d\u2060\ufeff",
  "\ud800",
  "\udfff"
]

describe("isSafeIdentifier", () => {
  it("accepts ordinary identifiers", () => {
    for (const id of ["acct_42", "user-7@tenant", "日本の口座", "😀-pair", "a b"])
      assert.isTrue(isSafeIdentifier(id), id)
  })

  for (const char of forbidden) {
    it(`refuses U+${char.charCodeAt(0).toString(16).padStart(4, "0")}`, () => {
      assert.isFalse(isSafeIdentifier(`acct${char}x`))
    })
  }

  it.prop(
    "any identifier containing a forbidden character is refused, wherever it is",
    [fc.string(), fc.constantFrom(...forbidden), fc.string()],
    ([before, char, after]) => {
      // a forbidden surrogate must stay unpaired: keep it away from neighbouring surrogates
      assert.isFalse(isSafeIdentifier(`${before}|${char}|${after}`))
    }
  )

  it.prop(
    "any string of letters, digits and punctuation is accepted",
    [fc.string({ unit: "grapheme" }).map((s) => s.replace(/[^\p{L}\p{N}\p{P}]/gu, ""))],
    ([id]) => {
      assert.isTrue(isSafeIdentifier(id))
    }
  )

  it("the schema bounds the length and applies the rule", () => {
    const decode = Schema.decodeUnknownEither(Identifier(1, 8))
    assert.isTrue(Either.isRight(decode("acct_1")))
    assert.isTrue(Either.isLeft(decode("")))
    assert.isTrue(Either.isLeft(decode("123456789")))
    assert.isTrue(Either.isLeft(decode("a\u202eb")))
  })
})
