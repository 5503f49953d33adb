import { assert, describe, it } from "@effect/vitest"
import * as Option from "effect/Option"
import * as fc from "fast-check"
import { inferSentiment, normalizeEvent, payloadHashInput, resolveSentiment } from "../../../core/ingest/Normalize.ts"
import { canonicalJson } from "../../../core/protocol/Json.ts"
import { baseEvent, type Json, now, valid, withProperties } from "./support.ts"

const context = { id: "evt_0001", workspaceId: "ws_1", receivedAt: now }

/** A deep copy of a JSON value with every object's keys in a permuted order. */
const reorder = (value: unknown, pick: (n: number) => number): unknown => {
  if (Array.isArray(value)) return value.map((item) => reorder(item, pick))
  if (typeof value === "object" && value !== null) {
    const keys = Object.keys(value)
    const order: Array<string> = []
    while (keys.length > 0) order.push(keys.splice(pick(keys.length), 1)[0]!)
    return Object.fromEntries(order.map((key) => [key, reorder((value as Json)[key], pick)]))
  }
  return value
}

describe("canonicalJson", () => {
  it("sorts keys at every level and writes no whitespace", () => {
    assert.strictEqual(
      canonicalJson({ b: 1, a: [{ d: null, c: "x" }, true], é: 2, A: 1.5 }),
      `{"A":1.5,"a":[{"c":"x","d":null},true],"b":1,"é":2}`
    )
  })

  it("omits undefined members as JSON does", () => {
    assert.strictEqual(canonicalJson({ a: undefined, b: [undefined] }), `{"b":[null]}`)
  })

  it.prop(
    "is invariant under key reordering",
    [fc.jsonValue(), fc.array(fc.nat(), { minLength: 1, maxLength: 50 })],
    ([value, choices]) => {
      let i = 0
      const pick = (n: number) => choices[i++ % choices.length]! % n
      assert.strictEqual(canonicalJson(reorder(value, pick)), canonicalJson(value))
    }
  )

  it.prop("round-trips through JSON.parse", [fc.jsonValue()], ([value]) => {
    assert.strictEqual(canonicalJson(JSON.parse(canonicalJson(value))), canonicalJson(value))
    assert.deepStrictEqual(JSON.parse(canonicalJson(value)), JSON.parse(JSON.stringify(value)))
  })
})

describe("normalizeEvent", () => {
  it("stores the event with its indexed columns", () => {
    const event = valid({ ...baseEvent(), value: 49, properties: { plan: "pro" } })
    const { stored } = normalizeEvent(event, context)
    assert.deepStrictEqual(
      { ...stored, body: undefined },
      {
        id: "evt_0001",
        workspaceId: "ws_1",
        eventId: "checkout_completed:cs_123",
        accountId: "acct_42",
        eventName: "checkout_completed",
        occurredAt: now - 60_000,
        receivedAt: now,
        body: undefined
      }
    )
    assert.deepStrictEqual(stored.body, {
      event_name: "checkout_completed",
      account_id: "acct_42",
      timestamp: "2026-11-22T11:59:00.000Z",
      event_id: "checkout_completed:cs_123",
      value: 49,
      properties: { plan: "pro" },
      sentiment: "positive",
      sentiment_source: "inferred",
      sentiment_inferred: true
    })
  })

  it("stores no eventId when none was sent, and empty properties", () => {
    const raw = baseEvent()
    delete raw.event_id
    const { stored } = normalizeEvent(valid(raw), context)
    assert.isNull(stored.eventId)
    assert.deepStrictEqual(stored.body.properties, {})
  })

  it("writes the timestamp in the sending form", () => {
    const { stored } = normalizeEvent(valid({ ...baseEvent(), timestamp: "2026-11-22T11:59:00+00:00" }), context)
    assert.strictEqual(stored.body.timestamp, "2026-11-22T11:59:00.000Z")
  })

  describe("user", () => {
    const withUser = (user: Json): Json => ({ ...baseEvent(), user_id: "user_7", user })

    it("is left out of the body and returned as an update with the event's time and id", () => {
      const normalized = normalizeEvent(valid(withUser({ name: "Ada", email: "ada@example.com" })), context)
      assert.isFalse("user" in normalized.stored.body)
      assert.strictEqual(normalized.stored.body.user_id, "user_7")
      const field = (value: string) => ({ value, observedAt: now - 60_000, sourceEventId: "evt_0001" })
      assert.deepStrictEqual(Option.getOrThrow(normalized.userUpdate), {
        workspaceId: "ws_1",
        userId: "user_7",
        name: field("Ada"),
        email: field("ada@example.com")
      })
    })

    it("updates only the fields sent (leaving one out keeps the stored value)", () => {
      const nameOnly = Option.getOrThrow(normalizeEvent(valid(withUser({ name: "Ada" })), context).userUpdate)
      assert.isFalse("email" in nameOnly)
      const emailOnly = Option.getOrThrow(normalizeEvent(valid(withUser({ email: "a@b.co" })), context).userUpdate)
      assert.isFalse("name" in emailOnly)
    })

    it("no update without user or with an empty user", () => {
      assert.isTrue(Option.isNone(normalizeEvent(valid(withUser({})), context).userUpdate))
      assert.isTrue(Option.isNone(normalizeEvent(valid({ ...baseEvent(), user_id: "u" }), context).userUpdate))
    })
  })

  it("returns the profile facts with the event's time and Accord's id", () => {
    const { profileFacts } = normalizeEvent(valid(withProperties(baseEvent(), { seat_count: 4 })), context)
    assert.deepStrictEqual(profileFacts, [
      { name: "seat_count", value: 4, observedAt: now - 60_000, sourceEventId: "evt_0001" }
    ])
  })

  it("returns the login a user's login event records, in the event's workspace", () => {
    const event = valid({ ...baseEvent(), event_name: "user_logged_in", semantic_type: "login", user_id: "user_7" })
    assert.deepStrictEqual(
      normalizeEvent(event, context).login,
      Option.some({
        workspaceId: "ws_1",
        accountId: "acct_42",
        userId: "user_7",
        observedAt: now - 60_000,
        sourceEventId: "evt_0001"
      })
    )
    assert.isTrue(Option.isNone(normalizeEvent(valid(baseEvent()), context).login))
  })
})

describe("payload hash input", () => {
  it("is the same for the same event with keys in another order or the instant written differently", () => {
    const a = valid({
      ...baseEvent(),
      user_id: "u",
      user: { name: "Ada", email: "a@b.co" },
      properties: { x: 1, y: { b: 2, a: 1 } }
    })
    const b = valid({
      properties: { y: { a: 1, b: 2 }, x: 1 },
      user: { email: "a@b.co", name: "Ada" },
      user_id: "u",
      event_id: "checkout_completed:cs_123",
      timestamp: "2026-11-22T11:59:00+00:00",
      account_id: "acct_42",
      event_name: "checkout_completed"
    })
    assert.strictEqual(payloadHashInput(a), payloadHashInput(b))
    assert.strictEqual(normalizeEvent(a, context).payloadHashInput, payloadHashInput(a))
  })

  it("differs when anything sent differs, the user included", () => {
    const base = payloadHashInput(valid(baseEvent()))
    assert.notStrictEqual(payloadHashInput(valid({ ...baseEvent(), value: 1 })), base)
    assert.notStrictEqual(payloadHashInput(valid({ ...baseEvent(), timestamp: "2026-11-22T11:59:00.001Z" })), base)
    assert.notStrictEqual(
      payloadHashInput(valid({ ...baseEvent(), user_id: "u", user: { name: "A" } })),
      payloadHashInput(valid({ ...baseEvent(), user_id: "u", user: { name: "B" } }))
    )
  })

  it("excludes inferred fields", () => {
    assert.notInclude(payloadHashInput(valid(baseEvent())), "sentiment")
  })
})

describe("sentiment", () => {
  const resolve = (raw: Json) => resolveSentiment(valid(raw))
  const named = (event_name: string, extra: Json = {}): Json => ({ ...baseEvent(), event_name, ...extra })

  it("missing and not inferable is unknown, not neutral", () => {
    assert.deepStrictEqual(resolve(named("checkout_started")), {
      sentiment: "unknown",
      sentiment_source: "unknown",
      sentiment_inferred: false
    })
  })

  it("explicit sentiment wins over the mapped one, with source explicit unless sent", () => {
    assert.deepStrictEqual(resolve(named("sync_failed", { sentiment: "positive", sentiment_score: 0.4 })), {
      sentiment: "positive",
      sentiment_source: "explicit",
      sentiment_inferred: false,
      sentiment_score: 0.4
    })
    assert.deepStrictEqual(
      resolve(named("sync_failed", { sentiment: "neutral", sentiment_source: "ai", sentiment_confidence: 0.7 })),
      {
        sentiment: "neutral",
        sentiment_source: "ai",
        sentiment_inferred: false,
        sentiment_confidence: 0.7
      }
    )
  })

  it("an explicit unknown stays unknown", () => {
    assert.strictEqual(resolve(named("payment_succeeded", { sentiment: "unknown" })).sentiment, "unknown")
  })

  const negative: ReadonlyArray<readonly [string, Json]> = [
    ["limit_hit", {}],
    ["usage_limit_hit", {}],
    ["quota_blocked", {}],
    ["overage_prompt_viewed", {}],
    ["report_exported", { semantic_type: "limit_friction" }],
    ["report_exported", { event_kind: "friction_event" }],
    ["sync_failed", {}],
    ["setup_failed", {}],
    ["invoice_payment_failed", {}],
    ["cancel_completed", {}],
    ["downgrade_completed", {}],
    ["subscription_paused", {}],
    ["checkout_abandoned", {}],
    ["support_needed", {}],
    ["export_finished", { properties: { error_code: "timeout" } }]
  ]
  for (const [name, extra] of negative) {
    it(`infers negative for ${name} ${JSON.stringify(extra)}`, () => {
      assert.deepStrictEqual(resolve(named(name, extra)), {
        sentiment: "negative",
        sentiment_source: "inferred",
        sentiment_inferred: true
      })
    })
  }

  const positive: ReadonlyArray<readonly [string, Json]> = [
    ["account_activated", {}],
    ["first_value_completed", {}],
    ["checkout_completed", {}],
    ["payment_succeeded", {}],
    ["subscription_upgraded", {}],
    ["plan_upgraded", {}],
    ["seat_added", {}],
    ["integration_connected", {}],
    ["entitlement_active", {}],
    ["report_exported", { semantic_type: "activation" }]
  ]
  for (const [name, extra] of positive) {
    it(`infers positive for ${name} ${JSON.stringify(extra)}`, () => {
      assert.strictEqual(resolve(named(name, extra)).sentiment, "positive")
      assert.strictEqual(resolve(named(name, extra)).sentiment_source, "inferred")
    })
  }

  for (const name of [
    "usage_rollup_recorded",
    "user_logged_in",
    "session_started",
    "checkout_started",
    "plan_changed",
    "feature_used"
  ]) {
    it(`leaves ${name} unknown`, () => {
      assert.strictEqual(resolve(named(name)).sentiment, "unknown")
    })
  }

  it("reads property keys, never values", () => {
    assert.isTrue(
      Option.isNone(
        inferSentiment(valid(named("report_exported", { properties: { status: "failed", outcome: "cancel" } })))
      )
    )
  })

  it.prop(
    "inference never yields neutral",
    [
      fc.stringMatching(/^[a-z]{1,7}(?:_[a-z]{1,7}){0,3}$/),
      fc.option(fc.constantFrom("usage", "login", "activation", "limit_friction"), { nil: undefined })
    ],
    ([event_name, semantic_type]) => {
      const inferred = inferSentiment(semantic_type === undefined ? { event_name } : { event_name, semantic_type })
      assert.isTrue(Option.isNone(inferred) || inferred.value !== ("neutral" as string))
    }
  )
})
