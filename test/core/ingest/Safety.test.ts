import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import {
  freeTextMaxChars,
  freeTextMaxWords,
  isHighEntropyToken,
  keyWords,
  maxPropertyArrayItems,
  maxPropertyDepth,
  maxPropertyKeyLength,
  maxPropertyKeys,
  maxPropertyStringLength,
  maxPropertyTotalKeys,
  redactedKey,
  type SafetyIssue,
  screenEnvelope,
  screenProperties,
  hasCardNumber,
  hasIban,
  hasIpv6,
  pathSegment
} from "../../../core/ingest/Safety.ts"
import * as Either from "effect/Either"
import { prepareEvent } from "../../../core/ingest/Ingest.ts"
import { baseEvent, now } from "./support.ts"
import type { Json } from "./support.ts"
import { safePayloads, stringsIn, unsafeEnvelope, unsafeIdentifiers, unsafePayloads } from "./unsafePayloads.ts"

/** A deterministic byte source (xorshift32) standing in for a CSPRNG in tests. */
const randomBytes = (seed: number) => {
  let x = seed
  return (n: number): Uint8Array =>
    Uint8Array.from({ length: n }, () => {
      x ^= x << 13
      x ^= x >>> 17
      x ^= x << 5
      return x & 0xff
    })
}

const base64url = (bytes: Uint8Array): string =>
  Buffer.from(bytes).toString("base64").replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "")

const codesAt = (issues: ReadonlyArray<SafetyIssue>, path: string) =>
  issues.filter((issue) => issue.path === path).map((issue) => issue.code)

describe("Safety", () => {
  it(`the table has at least 40 unsafe payloads (${unsafePayloads.length})`, () => {
    assert.isAtLeast(unsafePayloads.length, 40)
  })

  it(`the tables have at least 150 unsafe and 60 safe payloads (${unsafePayloads.length}, ${safePayloads.length})`, () => {
    assert.isAtLeast(unsafePayloads.length, 150)
    assert.isAtLeast(safePayloads.length, 60)
  })

  for (const [label, properties] of safePayloads) {
    it(`accepts ${label} (a false-positive guard)`, () => assert.deepStrictEqual(screenProperties(properties), []))
  }

  describe("the envelope outside properties", () => {
    for (const [path, fields, offending] of unsafeEnvelope) {
      it(`refuses ${path} = ${offending.slice(0, 16)}… without echoing it`, () => {
        const issues = screenEnvelope({ ...baseEvent(), ...fields })
        assert.deepStrictEqual(
          issues.map((issue) => [issue.code, issue.path]),
          [["unsafe_property", path]]
        )
        assert.notInclude(JSON.stringify(issues), offending)
      })
    }

    it("lets a valid envelope through, the e-mail in user included", () => {
      assert.deepStrictEqual(
        screenEnvelope({
          ...baseEvent(),
          semantic_type: "purchase",
          event_kind: "billing_event",
          user_id: "user_7",
          user: { name: "Ada Lovelace", email: "ada@example.com" }
        }),
        []
      )
    })
  })

  describe("format checks", () => {
    it("cards: Luhn-valid with a card scheme's first digits; not epoch milliseconds, compact dates or bad checksums", () => {
      assert.isTrue(hasCardNumber("4111 1111 1111 1111"))
      assert.isFalse(hasCardNumber("4111 1111 1111 1112"))
      assert.isFalse(hasCardNumber("1732400000000"))
      assert.isFalse(hasCardNumber("20261121093000"))
    })

    it("IBANs: mod 97", () => {
      assert.isTrue(hasIban("DE89370400440532013000"))
      assert.isFalse(hasIban("DE88370400440532013000"))
    })

    it("IPv6: groups around ::, not times or prefix::name identifiers", () => {
      assert.isTrue(hasIpv6("2001:db8::1"))
      assert.isFalse(hasIpv6("09:30:00"))
      assert.isFalse(hasIpv6("billing::invoices"))
      assert.isFalse(hasIpv6("2026-11-21T09:30:00.000Z"))
    })

    it("path segments: a refused, over-long or unprintable name is a placeholder", () => {
      assert.strictEqual(pathSegment("plan"), "plan")
      assert.strictEqual(pathSegment("ada@example.com"), redactedKey)
      assert.strictEqual(pathSegment("sk_live_abc"), redactedKey)
      assert.strictEqual(pathSegment("a\u202eb"), redactedKey)
      assert.strictEqual(pathSegment("k".repeat(maxPropertyKeyLength + 1)), redactedKey)
    })
  })

  describe("a value planted anywhere in a safe event", () => {
    const safeEntries = safePayloads.flatMap(([, properties]) => Object.entries(properties))
    // values refused for what they are (not for their name), long enough to search for
    const planted = unsafePayloads.flatMap(([, properties]) => {
      const value = (properties as Record<string, unknown>).k
      return typeof value === "string" && value.length >= 6 ? [value] : []
    })
    const key = fc.stringMatching(/^[a-z][a-z0-9]{0,7}$/).map((word) => `f_${word}`)
    const safeObject = fc
      .uniqueArray(fc.constantFrom(...safeEntries), { maxLength: 6, selector: ([k]) => k })
      .map((entries) => Object.fromEntries(entries))

    it.prop(
      "is refused, and never appears in the rejection",
      [safeObject, fc.array(key, { minLength: 1, maxLength: 3 }), fc.constantFrom(...planted), fc.boolean()],
      ([properties, path, value, inArray]) => {
        // build the nesting from the innermost key out: depth 1 to 3
        let planted: unknown = inArray && path.length < 3 ? [value] : value
        for (let i = path.length - 1; i >= 1; i--) planted = { [path[i]!]: planted }
        const body = { ...baseEvent(), properties: { ...properties, [path[0]!]: planted } }
        const result = prepareEvent(body, { id: "evt_1", workspaceId: "ws_1", now })
        assert.isTrue(Either.isLeft(result))
        const rejection = Either.getLeft(result).pipe((o) => (o._tag === "Some" ? o.value : undefined))!
        assert.strictEqual(rejection._tag, "UnsafeEvent")
        const text = JSON.stringify(rejection) + rejection.message
        assert.notInclude(text, value)
      },
      { fastCheck: { numRuns: 300, seed: 19 } }
    )
  })

  for (const [label, properties, path, offending] of unsafePayloads) {
    it(`refuses ${label} at ${path} without echoing it`, () => {
      const issues = screenProperties(properties)
      assert.include(codesAt(issues, path), "unsafe_property", JSON.stringify(issues))
      for (const issue of issues) {
        const text = issue.reason + " " + issue.path
        assert.notInclude(issue.reason, offending)
        for (const s of stringsIn(properties)) if (s.length >= 4) assert.notInclude(text, s)
      }
    })
  }

  const safe: ReadonlyArray<readonly [string, Json]> = [
    ["plan codes and counts", { plan: "pro_annual", seat_count: 12, is_in_trial: false, reason_code: "too_expensive" }],
    [
      "identifiers",
      {
        checkout_id: "550e8400-e29b-41d4-a716-446655440000",
        stripe_checkout: "cs_live_a1J3sZzJ5x1yJ6eO7m0vQ9y3H9ZcXw2RkL0T1pY4nB8uV6dS2fE",
        subscription: "sub_1MowQVLkdIwHu7ixeRlqHVzs",
        ulid: "01HZX3K5Q8N7R2M4P6T9V1W3Y5",
        promo: "EnterpriseAnnualPlan2024PromoCode",
        campaign: "enterprise_annual_plan_2024_promo_q4"
      }
    ],
    [
      "timestamps and numbers",
      { usage_start: "2026-11-21T00:00:00.000Z", amount: 1234567890, ratio: 0.25, build: "10.0.19045.1234" }
    ],
    [
      "short labels and URLs without query",
      { label: "Pro plan", docs: "https://example.com/pricing", region: "us-east-1" }
    ],
    ["eight words", { k: "one two three four five six seven eight" }],
    [
      "described secrets and measures",
      {
        token_type: "bearer",
        input_tokens: 1500,
        tokens_used: 20,
        session_count: 3,
        session_started_at: "2026-11-21T09:00:00Z",
        password_set: true,
        has_api_key: true,
        api_key_status: "active",
        webhook_configured: true,
        cookie_consent: "accepted",
        email_verified: true,
        email_domain: "acme.com",
        feedback_score: 4,
        message_count: 12,
        error_code: "timeout",
        mobile_app_version: "3.1.0",
        secret: null
      }
    ],
    ["nesting at the limit", { a: { b: { c: 1 } }, list: [{ sku: "x" }] }]
  ]

  for (const [label, properties] of safe) {
    it(`accepts ${label}`, () => assert.deepStrictEqual(screenProperties(properties), []))
  }

  describe("bounds (property_bounds)", () => {
    const keys = (n: number): Json => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i]))
    const nested = (depth: number): Json => (depth <= 1 ? { leaf: 1 } : { n: nested(depth - 1) })
    const bound = (properties: Json, path: string) => {
      const issues = screenProperties(properties)
      assert.deepStrictEqual(codesAt(issues, path), ["property_bounds"], JSON.stringify(issues))
    }

    it(`${maxPropertyKeys} keys in one object, not more`, () => {
      assert.deepStrictEqual(screenProperties(keys(maxPropertyKeys)), [])
      bound(keys(maxPropertyKeys + 1), "properties")
      bound({ inner: keys(maxPropertyKeys + 1) }, "properties.inner")
    })

    it(`${maxPropertyTotalKeys} keys in all, not more`, () => {
      const spread = (total: number): Json =>
        Object.fromEntries(Array.from({ length: 4 }, (_, i) => [`o${i}`, keys(total / 4 - 1)]))
      assert.deepStrictEqual(screenProperties(spread(maxPropertyTotalKeys)), [])
      const over = { ...spread(maxPropertyTotalKeys), extra: 1 }
      bound(over, "properties")
    })

    it(`depth ${maxPropertyDepth}, not more`, () => {
      assert.deepStrictEqual(screenProperties(nested(maxPropertyDepth)), [])
      bound(nested(maxPropertyDepth + 1), "properties.n.n.n")
      bound({ a: [[["deep"]]] }, "properties.a.0.0")
    })

    it(`strings of ${maxPropertyStringLength} characters, not more`, () => {
      const text = (n: number) => "ab".repeat(n).slice(0, n)
      assert.strictEqual(
        codesAt(screenProperties({ s: text(maxPropertyStringLength) }), "properties.s")[0],
        "unsafe_property"
      )
      // too long, and (over the free-text length) unsafe as well
      assert.deepStrictEqual(codesAt(screenProperties({ s: text(maxPropertyStringLength + 1) }), "properties.s"), [
        "property_bounds",
        "unsafe_property"
      ])
    })

    it("an over-long string gets the specific reason its beginning shows, else free text", () => {
      const [secret] = screenProperties({ s: "sk_live_4eC39HqLyjWDarjtT1zdp7dc " + "x".repeat(1000) }).filter(
        (i) => i.code === "unsafe_property"
      )
      assert.include(secret!.reason, "payment provider API key")
      const [trace] = screenProperties({ s: "Error: boom\n    at charge (billing.js:41:7)\n".repeat(100) }).filter(
        (i) => i.code === "unsafe_property"
      )
      assert.include(trace!.reason, "free text")
    })

    it("__proto__ is refused as a property name at any level", () => {
      bound(JSON.parse(`{"__proto__":{"x":1}}`), "properties.__proto__")
      bound(JSON.parse(`{"a":[{"__proto__":1}]}`), "properties.a.0.__proto__")
    })

    it(`arrays of ${maxPropertyArrayItems} items, not more`, () => {
      const items = (n: number) => Array.from({ length: n }, (_, i) => i)
      assert.deepStrictEqual(screenProperties({ a: items(maxPropertyArrayItems) }), [])
      bound({ a: items(maxPropertyArrayItems + 1) }, "properties.a")
    })

    it(`names of ${maxPropertyKeyLength} characters, not more, shown redacted`, () => {
      assert.deepStrictEqual(screenProperties({ ["k".repeat(maxPropertyKeyLength)]: 1 }), [])
      bound({ ["k".repeat(maxPropertyKeyLength + 1)]: 1 }, `properties.${redactedKey}`)
      bound({ "": 1 }, `properties.${redactedKey}`)
    })

    it("values must be JSON", () => {
      bound({ f: () => 1 }, "properties.f")
      bound({ u: undefined }, "properties.u")
      bound({ n: Number.NaN }, "properties.n")
    })
  })

  describe("free text", () => {
    it(`a string with whitespace and more than ${freeTextMaxWords} words`, () => {
      const words = (n: number) => Array.from({ length: n }, (_, i) => `w${i}`).join(" ")
      assert.deepStrictEqual(screenProperties({ k: words(freeTextMaxWords) }), [])
      assert.deepStrictEqual(codesAt(screenProperties({ k: words(freeTextMaxWords + 1) }), "properties.k"), [
        "unsafe_property"
      ])
    })

    it(`a string longer than ${freeTextMaxChars} characters`, () => {
      assert.deepStrictEqual(screenProperties({ k: "z".repeat(freeTextMaxChars) }), [])
      assert.deepStrictEqual(codesAt(screenProperties({ k: "z".repeat(freeTextMaxChars + 1) }), "properties.k"), [
        "unsafe_property"
      ])
    })
  })

  describe("identifiers outside properties", () => {
    for (const [field, value, phrase] of unsafeIdentifiers) {
      it(`refuses ${field} = ${value.slice(0, 24)} at ${field} without echoing it`, () => {
        const issues = screenEnvelope({ [field]: value })
        assert.deepStrictEqual(
          issues.map((issue) => [issue.code, issue.path]),
          [["unsafe_property", field]]
        )
        assert.include(issues[0]!.reason, phrase)
        assert.notInclude(issues[0]!.reason, value)
      })
    }

    const accepted = [
      "acct_42",
      "Acme Corp",
      "5551234567",
      "550e8400e29b41d4a716446655440000",
      "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
      "evt_550e8400-e29b-41d4-a716-446655440000",
      "checkout_completed:cs_live_a1J3sZzJ5x1yJ6eO7m0vQ9y3H9ZcXw2RkL0T1pY4nB8uV6dS2fE",
      "user_2NNEqL2nrIRdJ194ndJqAHwEfxC",
      "usage_rollup_recorded:acct_42:api:requests:2026-11-21T00:00:00.000Z:2026-11-22T00:00:00.000Z"
    ]
    for (const id of accepted) {
      it(`accepts the identifier ${id.slice(0, 40)} (random-looking or long ids are identifiers)`, () => {
        assert.deepStrictEqual(screenEnvelope({ account_id: id, user_id: id, event_id: id }), [])
      })
    }

    it("reads only strings, and only the envelope's fields (properties are screened apart)", () => {
      assert.deepStrictEqual(
        screenEnvelope({ account_id: 42, user_id: null, properties: { note: "ada@example.com" } }),
        []
      )
    })
  })

  it("splits property names into words", () => {
    assert.deepStrictEqual(keyWords("accessToken"), ["access", "token"])
    assert.deepStrictEqual(keyWords("X-Api-Key"), ["x", "api", "key"])
    assert.deepStrictEqual(keyWords("APIKey"), ["api", "key"])
    assert.deepStrictEqual(keyWords("session_id"), ["session", "id"])
  })

  it("reports every unsafe location, not just the first", () => {
    const issues = screenProperties({ password: "x1", contact: "ada@example.com", nested: { note: "n" } })
    assert.deepStrictEqual(issues.map((issue) => issue.path).sort(), [
      "properties.contact",
      "properties.nested.note",
      "properties.password"
    ])
  })

  it("random secrets are refused: 32 random bytes as base64url (like Accord's own keys) or hex", () => {
    const next = randomBytes(0x2545f491)
    for (let i = 0; i < 2000; i++) {
      const bytes = next(32)
      assert.isTrue(isHighEntropyToken(Buffer.from(bytes).toString("hex")))
      const secret = base64url(bytes)
      // the provider-object-id shape (`word_Alnum…`) is exempt by design; it is one in millions
      if (!/^[a-z]{2,10}_(?:live_|test_)?[A-Za-z0-9]+$/.test(secret)) {
        assert.deepStrictEqual(
          screenProperties({ k: secret }).map((issue) => issue.code),
          ["unsafe_property"],
          secret
        )
      }
    }
  })

  it.prop("UUIDs are never refused", [fc.uuid()], ([uuid]) => {
    assert.deepStrictEqual(screenProperties({ id: uuid }), [])
  })

  it.prop(
    "no reason quotes the value it refuses",
    [
      fc.constantFrom("ada@example.com", "sk_live_4eC39HqLyjWDarjtT1zdp7dc", "+15551234567"),
      fc.string({ minLength: 1, maxLength: 12 })
    ],
    ([secret, padding]) => {
      const value = `${padding.replace(/\s/g, "")} ${secret}`
      for (const issue of screenProperties({ field: value })) {
        assert.notInclude(issue.reason, secret)
        assert.notInclude(issue.path, secret)
      }
    }
  )
})
