/**
 * The one strict JSON parser: syntax, duplicate keys at any depth (compared after unescaping) and
 * text that cannot be stored are each refused with their reason and where; everything else
 * parses as `JSON.parse` would.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import * as fc from "fast-check"
import {
  canonicalJson,
  canonicalObject,
  type MalformedBody,
  parseJsonBytes,
  parseJsonText,
  toFieldIssues
} from "../../../core/protocol/Json.ts"

const bytes = (text: string) => new TextEncoder().encode(text)
const refusal = (text: string): MalformedBody => {
  const result = parseJsonText(text)
  if (Either.isRight(result)) return assert.fail(`accepted ${text}`)
  return result.left
}

describe("parseJsonBytes", () => {
  it("parses strict UTF-8 JSON as JSON.parse does", () => {
    const text = `{"a":1,"b":[{"c":"x\\"y:"},{"c":"z"}],"d":{"e":null},"\\u0061b":true}`
    assert.deepStrictEqual(Either.getOrThrow(parseJsonBytes(bytes(text))), JSON.parse(text))
  })

  it("refuses invalid syntax, invalid UTF-8 and a byte-order mark as syntax", () => {
    assert.strictEqual(refusal(`{"a":`).reason, "syntax")
    const invalid = parseJsonBytes(new Uint8Array([0x7b, 0xff, 0x7d]))
    assert.isTrue(Either.isLeft(invalid) && invalid.left.reason === "syntax")
    const bom = parseJsonBytes(new Uint8Array([0xef, 0xbb, 0xbf, 0x7b, 0x7d]))
    assert.isTrue(Either.isLeft(bom) && bom.left.reason === "syntax")
  })

  it("refuses a duplicate key at the top, naming it", () => {
    const error = refusal(`{"a":1,"b":2,"a":3}`)
    assert.strictEqual(error.reason, "duplicate_key")
    assert.deepStrictEqual(error.at, ["a"])
  })

  it("refuses a nested duplicate key with its path through objects and arrays", () => {
    assert.deepStrictEqual(refusal(`{"x":[0,{"y":{}},{"k":1, "k" :2}]}`).at, ["x", 2, "k"])
  })

  it("compares keys after unescaping", () => {
    assert.deepStrictEqual(refusal(`{"ab":1,"\\u0061b":2}`).at, ["ab"])
  })

  it("allows the same key in sibling objects and a key-like text inside strings", () => {
    assert.isTrue(Either.isRight(parseJsonText(`[{"a":1},{"a":2},{"s":"\\"a\\": 1, \\"a\\": 2"}]`)))
    assert.isTrue(Either.isRight(parseJsonText(`{"a":"\\\\","b":{"a":"\\\\\\""}}`)))
  })

  it("refuses a string holding U+0000 as unstorable text, naming where", () => {
    const error = refusal(`{"accountId":"acct\\u0000x"}`)
    assert.strictEqual(error.reason, "unstorable_text")
    assert.deepStrictEqual(error.at, ["accountId"])
  })

  it("refuses a lone surrogate in a value or a name as unstorable text", () => {
    assert.deepStrictEqual(refusal(`{"a":["ok","\\ud800"]}`).at, ["a", 1])
    assert.deepStrictEqual(refusal(`{"a":{"\\udc00":1}}`).at, ["a", "\udc00"])
  })

  it("accepts escaped surrogate pairs and an escaped backslash before u0000", () => {
    assert.deepStrictEqual(Either.getOrThrow(parseJsonText(`{"e":"\\ud83d\\ude00","s":"\\\\u0000"}`)), {
      e: "\ud83d\ude00",
      s: "\\u0000"
    })
  })

  it("deep nesting is walked without recursion, and the path is found at the bottom", () => {
    const depth = 5000
    const nul = "[".repeat(depth) + `{"k":"\\u0000"}` + "]".repeat(depth)
    const error = refusal(nul)
    assert.strictEqual(error.reason, "unstorable_text")
    assert.strictEqual(error.at.length, depth + 1)
    assert.strictEqual(error.at[depth], "k")
    const dup = "[".repeat(depth) + `{"k":1,"k":2}` + "]".repeat(depth)
    assert.strictEqual(refusal(dup).at.length, depth + 1)
  })

  const key = fc.string({ minLength: 1, maxLength: 8 })
  const json = fc.letrec((tie) => ({
    value: fc.oneof({ depthSize: "small" }, fc.integer(), fc.string(), fc.constant(null), tie("array"), tie("object")),
    array: fc.array(tie("value"), { maxLength: 4 }),
    object: fc.dictionary(key, tie("value"), { maxKeys: 4 })
  })).value

  it.prop("any JSON text without duplicate keys parses to the same value", [json], ([value]) => {
    const text = JSON.stringify(value)
    const parsed = parseJsonText(text)
    assert.isTrue(Either.isRight(parsed))
  })

  it.prop(
    "any JSON text with a key duplicated in an object at any depth is refused",
    [json, key, fc.nat(), fc.boolean()],
    ([value, dup, seed, spaced]) => {
      // Plant `{"dup":1,"dup":2}` (optionally with whitespace) somewhere in the document.
      const planted = spaced
        ? `{ ${JSON.stringify(dup)} : 1 , ${JSON.stringify(dup)} : 2 }`
        : `{${JSON.stringify(dup)}:1,${JSON.stringify(dup)}:2}`
      const marker = "\u0001planted\u0001"
      const holders: Array<(v: unknown) => unknown> = [
        () => marker,
        (v) => [v, marker],
        (v) => ({ outer: v, inner: { deeper: [marker] } })
      ]
      // A function replacement: a `$` in the planted key must not be read as a replacement pattern.
      const doc = JSON.stringify(holders[seed % holders.length]!(value)).replace(JSON.stringify(marker), () => planted)
      assert.strictEqual(refusal(doc).reason, "duplicate_key")
    }
  )
})

const recursiveText = (v: unknown): string =>
  Array.isArray(v)
    ? "[" + v.map(recursiveText).join(",") + "]"
    : typeof v === "object" && v !== null
      ? "{" +
        Object.keys(v)
          .sort()
          .map((k) => JSON.stringify(k) + ":" + recursiveText((v as Record<string, unknown>)[k]))
          .join(",") +
        "}"
      : JSON.stringify(v)

describe("canonicalJson", () => {
  it("sorts keys at every level, omits undefined members, writes omitted items as null, calls toJSON", () => {
    assert.strictEqual(
      canonicalJson({
        b: [1, undefined, "x", () => 1],
        a: { d: null, c: true, e: undefined },
        t: new Date(0),
        n: Number.NaN
      }),
      `{"a":{"c":true,"d":null},"b":[1,null,"x",null],"n":null,"t":"1970-01-01T00:00:00.000Z"}`
    )
    assert.strictEqual(canonicalJson([]), "[]")
    assert.strictEqual(canonicalJson({}), "{}")
    assert.strictEqual(canonicalObject({ timestamp: "a", z: 1, y: undefined }, "b"), `{"timestamp":"b","z":1}`)
    assert.strictEqual(canonicalObject({ z: 1 }, "b"), `{"z":1}`)
  })

  it.prop(
    "writes what a recursive serializer writes (sorted keys by UTF-16 code units)",
    [fc.jsonValue()],
    ([value]) => {
      assert.strictEqual(canonicalJson(value), recursiveText(value))
    },
    { fastCheck: { seed: 19, numRuns: 200 } }
  )

  // Values up to 64 deep are written by recursion, deeper ones by the work stack: both sides of the
  // hand-over write the same text, with toJSON, omitted members and the timestamp stand-in.
  it.prop(
    "writes the same text on both sides of the depth where recursion hands over to the stack",
    [
      fc.integer({ min: 58, max: 70 }),
      fc.jsonValue({ maxDepth: 2 }),
      fc.array(fc.boolean(), { minLength: 70, maxLength: 70 })
    ],
    ([depth, leaf, asArray]) => {
      let value: unknown = leaf
      let text = recursiveText(leaf)
      for (let i = 0; i < depth; i++) {
        if (asArray[i]) {
          value = [value, undefined, { toJSON: () => "j" }]
          text = `[${text},null,"j"]`
        } else {
          value = { z: value, a: undefined, m: { toJSON: () => i } }
          text = `{"m":${i},"z":${text}}`
        }
      }
      assert.strictEqual(canonicalJson(value), text)
      assert.strictEqual(canonicalObject({ timestamp: "x", v: value }, "t"), `{"timestamp":"t","v":${text}}`)
    },
    { fastCheck: { seed: 20, numRuns: 100 } }
  )

  // Regression (found by a fuzzed body): a 64 KiB intake body of nested arrays overflowed the call
  // stack while its Idempotency-Key hash was computed, and POST /action-requests answered 500.
  it("serializes any nesting depth without exhausting the stack", () => {
    const depth = 200_000
    assert.strictEqual(
      canonicalJson(JSON.parse("[".repeat(depth) + "]".repeat(depth))),
      "[".repeat(depth) + "]".repeat(depth)
    )
    const objects = JSON.parse('{"a":'.repeat(50_000) + "1" + "}".repeat(50_000))
    assert.strictEqual(canonicalJson(objects), '{"a":'.repeat(50_000) + "1" + "}".repeat(50_000))
  })
})

describe("toFieldIssues", () => {
  // Regression (found by a fuzzed body): Schema quotes the received value, formatting it recursively;
  // a body of arrays nested 30 000 deep overflowed the stack there and the route answered 500.
  it("names the whole body when the received value is too deep to format", () => {
    const deep = JSON.parse("[".repeat(30_000) + "]".repeat(30_000))
    const result = Schema.decodeUnknownEither(Schema.Struct({ a: Schema.String }))(deep)
    if (Either.isRight(result)) return assert.fail("decoded")
    assert.deepStrictEqual(toFieldIssues(result.left), [{ path: "", message: "is nested too deeply" }])
    assert.deepStrictEqual(toFieldIssues(result.left, { "": "must be a JSON object" }), [
      { path: "", message: "must be a JSON object" }
    ])
  })
})
