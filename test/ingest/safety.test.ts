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
  screenProperties
} from "../../core/ingest/Safety.ts"
import type { Json } from "./support.ts"

/** Every string value anywhere in `value`. */
const stringsIn = (value: unknown): Array<string> =>
  typeof value === "string"
    ? [value]
    : Array.isArray(value)
    ? value.flatMap(stringsIn)
    : typeof value === "object" && value !== null
    ? Object.values(value).flatMap(stringsIn)
    : []

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

// [label, properties, path of the refusal, the offending text that must never be echoed]
const unsafe: ReadonlyArray<readonly [string, Json, string, string]> = [
  // secret names
  ["password", { password: "hunter2!" }, "properties.password", "hunter2!"],
  ["passwd", { passwd: "s3cr3t-value" }, "properties.passwd", "s3cr3t-value"],
  ["secret", { secret: "shh-value" }, "properties.secret", "shh-value"],
  ["token", { token: "abc123def" }, "properties.token", "abc123def"],
  ["access_token", { access_token: "at-value-1" }, "properties.access_token", "at-value-1"],
  ["refresh_token", { refresh_token: "rt-value-1" }, "properties.refresh_token", "rt-value-1"],
  ["accessToken (camelCase)", { accessToken: "at-value-2" }, "properties.accessToken", "at-value-2"],
  ["api_key", { api_key: "key-value-1" }, "properties.api_key", "key-value-1"],
  ["apikey", { apikey: "key-value-2" }, "properties.apikey", "key-value-2"],
  ["X-Api-Key", { "X-Api-Key": "key-value-3" }, "properties.X-Api-Key", "key-value-3"],
  ["authorization", { authorization: "opaque-auth" }, "properties.authorization", "opaque-auth"],
  ["auth_header", { auth_header: "opaque-header" }, "properties.auth_header", "opaque-header"],
  ["cookie", { cookie: "sid=abc" }, "properties.cookie", "sid=abc"],
  ["session", { session: "sess-value" }, "properties.session", "sess-value"],
  ["session_id", { session_id: "sess-id-value" }, "properties.session_id", "sess-id-value"],
  ["signature", { signature: "sig-value" }, "properties.signature", "sig-value"],
  ["private_key", { private_key: "pk-material" }, "properties.private_key", "pk-material"],
  ["client_secret", { client_secret: "cs-material" }, "properties.client_secret", "cs-material"],
  ["invite_link", { invite_link: "join-me-here" }, "properties.invite_link", "join-me-here"],
  ["invite_url", { invite_url: "https://app.example.com/i/abc" }, "properties.invite_url", "https://app.example.com/i/abc"],
  ["webhook_url", { webhook_url: "https://example.com/in" }, "properties.webhook_url", "https://example.com/in"],
  ["destination_secret", { destination_secret: "dest-secret" }, "properties.destination_secret", "dest-secret"],
  ["credentials object", { credentials: { user: "svc", pass: "pw-value" } }, "properties.credentials", "pw-value"],
  ["password as a number", { password: 12345678 }, "properties.password", "12345678"],
  ["nested token", { integration: { provider: "hubspot", oauth_token: "tok-nested" } }, "properties.integration.oauth_token", "tok-nested"],
  // secret values
  ["Stripe live secret key", { provider_key: "sk_live_4eC39HqLyjWDarjtT1zdp7dc" }, "properties.provider_key", "sk_live_4eC39HqLyjWDarjtT1zdp7dc"],
  ["Stripe test secret key", { k: "sk_test_4eC39HqLyjWDarjtT1zdp7dc" }, "properties.k", "sk_test_4eC39HqLyjWDarjtT1zdp7dc"],
  ["Stripe restricted key", { k: "rk_live_51H8abcdefghijkl" }, "properties.k", "rk_live_51H8abcdefghijkl"],
  ["Stripe publishable key", { k: "pk_live_51H8abcdefghijkl" }, "properties.k", "pk_live_51H8abcdefghijkl"],
  ["webhook signing secret", { k: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" }, "properties.k", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"],
  ["payment client secret", { k: "pi_3MtwBwLkdIwHu7ix28a3tqPa_secret_YrKJUKribcBjcG8HVhfZluoGH" }, "properties.k", "pi_3MtwBwLkdIwHu7ix28a3tqPa_secret_YrKJUKribcBjcG8HVhfZluoGH"],
  ["JWT", { k: "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U" }, "properties.k", "eyJhbGciOiJIUzI1NiJ9"],
  ["Bearer header value", { k: "Bearer abcdefghijklmnop" }, "properties.k", "abcdefghijklmnop"],
  ["Basic header value", { k: "Basic dXNlcjpwYXNzd29yZA==" }, "properties.k", "dXNlcjpwYXNzd29yZA=="],
  ["AWS access key", { k: "AKIAIOSFODNN7EXAMPLE" }, "properties.k", "AKIAIOSFODNN7EXAMPLE"],
  ["GitHub token", { k: "ghp_1234567890abcdefghijABCDEFGHIJ123456" }, "properties.k", "ghp_1234567890abcdefghijABCDEFGHIJ123456"],
  ["Slack token", { k: "xoxb-123456789012-abcdefghijkl" }, "properties.k", "xoxb-123456789012-abcdefghijkl"],
  ["Accord ingest key", { k: "acc_ingest_Zx8mQ2pL9vT4wB7nK1sD5fG3hJ6" }, "properties.k", "acc_ingest_Zx8mQ2pL9vT4wB7nK1sD5fG3hJ6"],
  ["PEM private key", { k: "-----BEGIN RSA PRIVATE KEY-----" }, "properties.k", "BEGIN RSA PRIVATE KEY"],
  ["long hex", { k: "a3f5c9e2b1d4f6a8c0e2b4d6f8a0c2e4" }, "properties.k", "a3f5c9e2b1d4f6a8c0e2b4d6f8a0c2e4"],
  ["long base64", { k: "Xk9aB3dF7hJ2kL5mN8pQ1rS4tU6vW9yZ0aB3cD" }, "properties.k", "Xk9aB3dF7hJ2kL5mN8pQ1rS4tU6vW9yZ0aB3cD"],
  ["credentials in key=value form", { k: "user=svc&password=pw1" }, "properties.k", "pw1"],
  ["URL with credentials", { k: "postgres://svc:pw9@db.example.com/app" }, "properties.k", "pw9@db.example.com"],
  // links
  ["URL with a query string", { landing: "https://example.com/pricing?utm_source=x&email=a" }, "properties.landing", "utm_source"],
  ["URL with fragment parameters", { k: "https://app.example.com/cb#access_token=abc" }, "properties.k", "access_token=abc"],
  ["Slack webhook", { k: "https://hooks.slack.com/services/T000/B000/XXXX" }, "properties.k", "hooks.slack.com"],
  ["Discord webhook", { k: "https://discord.com/api/webhooks/123/abc" }, "properties.k", "discord.com"],
  ["webhook path", { k: "https://api.example.com/webhook/in-1" }, "properties.k", "api.example.com"],
  ["invite link", { k: "https://app.example.com/invite/abc123" }, "properties.k", "invite/abc123"],
  // personal data outside user
  ["e-mail value", { contact: "ada@example.com" }, "properties.contact", "ada@example.com"],
  ["e-mail in an array", { recipients: ["ok", "bob@example.org"] }, "properties.recipients.1", "bob@example.org"],
  ["email key", { email: "someone" }, "properties.email", "someone"],
  ["phone E.164", { k: "+15551234567" }, "properties.k", "+15551234567"],
  ["phone North American", { k: "(555) 123-4567" }, "properties.k", "123-4567"],
  ["phone international", { k: "+44 20 7946 0958" }, "properties.k", "7946 0958"],
  ["phone national", { k: "020 7946 0958" }, "properties.k", "7946 0958"],
  ["phone_number key as a number", { phone_number: 5551234567 }, "properties.phone_number", "5551234567"],
  ["first_name key", { first_name: "Ada" }, "properties.first_name", "Ada"],
  ["ip_address key", { ip_address: "host-1" }, "properties.ip_address", "host-1"],
  ["IPv4 value", { origin: "192.168.1.20" }, "properties.origin", "192.168.1.20"],
  ["e-mail as a property name", { "ada@example.com": 3 }, `properties.${redactedKey}`, "ada@example.com"],
  // free text
  ["free text by words", { k: "the customer said the export is too slow for them" }, "properties.k", "too slow"],
  ["free text by length", { k: "x".repeat(freeTextMaxChars + 1) }, "properties.k", "x".repeat(freeTextMaxChars + 1)],
  ["comment", { comment: "meh" }, "properties.comment", "meh"],
  ["notes", { notes: "call back" }, "properties.notes", "call back"],
  ["description", { description: "Annual deal" }, "properties.description", "Annual deal"],
  ["message", { message: "hi there" }, "properties.message", "hi there"],
  ["error_message", { error_message: "timeout" }, "properties.error_message", "timeout"],
  ["feedback", { feedback: "love it" }, "properties.feedback", "love it"],
  ["survey_response", { survey_response: "maybe" }, "properties.survey_response", "maybe"],
  ["transcript", { transcript: "agent: hi" }, "properties.transcript", "agent: hi"],
  ["summary", { summary: "angry user" }, "properties.summary", "angry user"],
  ["prompt", { prompt: "write a poem" }, "properties.prompt", "write a poem"],
  ["request body", { body: { a: 1 } }, "properties.body", "body"],
  ["stack trace", { stack_trace: "at f (x.js:1)" }, "properties.stack_trace", "x.js:1"],
  ["stack", { stack: "Error: x" }, "properties.stack", "Error: x"],
  ["log", { log: "GET /" }, "properties.log", "GET /"],
  ["free-text reason", { reason: "too expensive" }, "properties.reason", "too expensive"]
]

const codesAt = (issues: ReadonlyArray<SafetyIssue>, path: string) =>
  issues.filter((issue) => issue.path === path).map((issue) => issue.code)

describe("Safety", () => {
  it(`the table has at least 40 unsafe payloads (${unsafe.length})`, () => {
    assert.isAtLeast(unsafe.length, 40)
  })

  for (const [label, properties, path, offending] of unsafe) {
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
    ["identifiers", {
      checkout_id: "550e8400-e29b-41d4-a716-446655440000",
      stripe_checkout: "cs_live_a1J3sZzJ5x1yJ6eO7m0vQ9y3H9ZcXw2RkL0T1pY4nB8uV6dS2fE",
      subscription: "sub_1MowQVLkdIwHu7ixeRlqHVzs",
      ulid: "01HZX3K5Q8N7R2M4P6T9V1W3Y5",
      promo: "EnterpriseAnnualPlan2024PromoCode",
      campaign: "enterprise_annual_plan_2024_promo_q4"
    }],
    ["timestamps and numbers", { usage_start: "2026-11-21T00:00:00.000Z", amount: 1234567890, ratio: 0.25, build: "10.0.19045.1234" }],
    ["short labels and URLs without query", { label: "Pro plan", docs: "https://example.com/pricing", region: "us-east-1" }],
    ["eight words", { k: "one two three four five six seven eight" }],
    ["described secrets and measures", {
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
    }],
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
      assert.strictEqual(codesAt(screenProperties({ s: text(maxPropertyStringLength) }), "properties.s")[0], "unsafe_property")
      bound({ s: text(maxPropertyStringLength + 1) }, "properties.s")
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
      assert.deepStrictEqual(codesAt(screenProperties({ k: words(freeTextMaxWords + 1) }), "properties.k"), ["unsafe_property"])
    })

    it(`a string longer than ${freeTextMaxChars} characters`, () => {
      assert.deepStrictEqual(screenProperties({ k: "z".repeat(freeTextMaxChars) }), [])
      assert.deepStrictEqual(codesAt(screenProperties({ k: "z".repeat(freeTextMaxChars + 1) }), "properties.k"), ["unsafe_property"])
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
        assert.deepStrictEqual(screenProperties({ k: secret }).map((issue) => issue.code), ["unsafe_property"], secret)
      }
    }
  })

  it.prop("UUIDs are never refused", [fc.uuid()], ([uuid]) => {
    assert.deepStrictEqual(screenProperties({ id: uuid }), [])
  })

  it.prop(
    "no reason quotes the value it refuses",
    [fc.constantFrom("ada@example.com", "sk_live_4eC39HqLyjWDarjtT1zdp7dc", "+15551234567"), fc.string({ minLength: 1, maxLength: 12 })],
    ([secret, padding]) => {
      const value = `${padding.replace(/\s/g, "")} ${secret}`
      for (const issue of screenProperties({ field: value })) {
        assert.notInclude(issue.reason, secret)
        assert.notInclude(issue.path, secret)
      }
    }
  )
})
