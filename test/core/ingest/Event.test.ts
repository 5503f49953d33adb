import { assert, describe, it } from "@effect/vitest"
import * as Either from "effect/Either"
import * as fc from "fast-check"
import {
  eventNameProblem,
  isBatch,
  maxFutureSkewMillis,
  minEventTimestamp,
  occurredAt,
  parseUtcTimestamp,
  validateEvent
} from "../../../core/ingest/Event.ts"
import type { FieldIssue } from "../../../core/protocol/Json.ts"
import { baseEvent, type Json, now } from "./support.ts"

const issuesOf = (raw: unknown, at: number = now): ReadonlyArray<FieldIssue> => {
  const result = validateEvent(raw, at)
  return Either.isLeft(result) ? result.left : []
}

const accepts = (raw: unknown, at: number = now): void => {
  const result = validateEvent(raw, at)
  if (Either.isLeft(result)) assert.fail(JSON.stringify(result.left))
  else assert.deepStrictEqual(result.right as unknown, raw)
}

/** Rejected, with an issue at `path`, and no message or path quoting `value`. */
const rejects = (raw: unknown, path: string, value?: unknown): ReadonlyArray<FieldIssue> => {
  const issues = issuesOf(raw)
  assert.isAbove(issues.length, 0, "expected a rejection")
  assert.include(
    issues.map((issue) => issue.path),
    path
  )
  if (typeof value === "string" && value.length >= 3) {
    for (const issue of issues) assert.notInclude(issue.message, value)
  }
  return issues
}

const set = (field: string, value: unknown): Json => ({ ...baseEvent(), [field]: value })
const without = (field: string): Json => {
  const copy = baseEvent()
  delete copy[field]
  return copy
}

describe("Event", () => {
  it("accepts the minimal event unchanged", () => {
    accepts(baseEvent())
    accepts(without("event_id"))
  })

  it("accepts every field of the spec's table", () => {
    accepts({
      ...baseEvent(),
      user_id: "user_7",
      user: { name: "Ada Lovelace", email: "ada@example.com" },
      semantic_type: "activation",
      event_kind: "billing_event",
      value: 49.5,
      properties: { plan: "pro" },
      sentiment: "positive",
      sentiment_score: 0.8,
      sentiment_confidence: 1,
      sentiment_source: "integration"
    })
  })

  describe("event_name", () => {
    const specNames = [
      "account_activated",
      "first_value_completed",
      "onboarding_completed",
      "feature_used",
      "workflow_completed",
      "report_exported",
      "api_credits_used",
      "generation_completed",
      "sync_completed",
      "limit_hit",
      "quota_blocked",
      "overage_prompt_viewed",
      "usage_limit_hit",
      "overage_started",
      "checkout_started",
      "checkout_completed",
      "checkout_abandoned",
      "subscription_updated",
      "subscription_upgraded",
      "invoice_payment_failed",
      "payment_succeeded",
      "plan_changed",
      "plan_upgraded",
      "downgrade_completed",
      "cancel_completed",
      "subscription_paused",
      "team_member_invited",
      "seat_added",
      "role_assigned",
      "integration_connected",
      "oauth_connected",
      "destination_configured",
      "sync_failed",
      "setup_failed",
      "support_needed",
      "entitlement_active",
      "feature_adopted",
      "user_logged_in",
      "session_started",
      "usage_rollup_recorded"
    ]
    for (const name of [
      ...specNames,
      "oauth2_connected",
      "s3_export_completed",
      "api_v2_called",
      "a",
      "step_completed",
      "e2e_test_passed",
      "k8s_cluster_created",
      "b2b_deal_won",
      "decade_reviewed",
      "facade_added",
      "sync_scheduled",
      "rhythm_set"
    ]) {
      it(`accepts ${name}`, () => accepts(set("event_name", name)))
    }

    for (const name of [
      "",
      "Checkout_completed",
      "checkoutCompleted",
      "checkout-completed",
      "checkout completed",
      "_checkout",
      "paid_",
      "checkout__completed",
      "1st_checkout",
      "checkout.completed",
      "x".repeat(65)
    ]) {
      it(`rejects ${JSON.stringify(name.slice(0, 20))} as not static lower_snake_case`, () => {
        const [issue] = rejects(set("event_name", name), "event_name", name)
        assert.include(issue!.message, "lower_snake_case")
      })
    }

    for (const name of [
      "checkout_completed_12345",
      "user_5f3a9c2e_login",
      "order_2_shipped",
      "invoice_01hzx3k5q8n7r2m4_paid",
      "account_550e8400_created",
      "report_20261122_exported",
      "user_deadbeefcafe_login",
      "order_a1b2c3_paid",
      "invoice_x9y8z7_sent",
      "job_qxzvbnmk_done"
    ]) {
      it(`rejects ${name} for its embedded identifier`, () => {
        const [issue] = rejects(set("event_name", name), "event_name", name)
        assert.include(issue!.message, "embedded identifiers")
        assert.isDefined(eventNameProblem(name))
      })
    }

    it("rejects a missing or non-string name", () => {
      rejects(without("event_name"), "event_name")
      rejects(set("event_name", 42), "event_name")
    })
  })

  describe("account_id", () => {
    it("explains why a missing account_id matters", () => {
      const issues = rejects(without("account_id"), "account_id")
      const message = issues.find((issue) => issue.path === "account_id")!.message
      assert.include(message, "account_id")
      assert.include(message, "attach to customer accounts")
    })

    for (const [label, value] of [
      ["empty", ""],
      ["too long", "a".repeat(257)],
      ["padded", " acct_42"],
      ["a number", 42],
      ["null", null],
      ["with a newline", "acct\n42"]
    ] as const) {
      it(`rejects an account_id that is ${label}`, () => rejects(set("account_id", value), "account_id", value))
    }

    it("accepts 256 characters", () => accepts(set("account_id", "a".repeat(256))))
  })

  describe("timestamp", () => {
    for (const ts of ["2026-11-22T11:59:00Z", "2026-11-22T11:59:00.123+00:00", "2020-01-01T00:00:00.000Z"]) {
      it(`accepts ${ts}`, () => accepts(set("timestamp", ts)))
    }

    for (const ts of [
      "2026-11-22T13:59:00+02:00",
      "2026-11-22T11:59:00-00:00",
      "2026-11-22T11:59:00",
      "2026-11-22 11:59:00Z",
      "2026-10-21",
      "1763812740",
      "yesterday"
    ]) {
      it(`rejects ${ts} as not ISO 8601 UTC`, () => {
        const [issue] = rejects(set("timestamp", ts), "timestamp", ts)
        assert.include(issue!.message, "UTC")
      })
    }

    it(`accepts ${new Date(minEventTimestamp).toISOString()} and later, and refuses earlier times as implausibly old`, () => {
      accepts(set("timestamp", new Date(minEventTimestamp).toISOString()))
      for (const ts of [
        "1999-12-31T23:59:59.999Z",
        "1970-01-01T00:00:00Z",
        "0001-01-01T00:00:00Z",
        "0099-06-01T00:00:00Z"
      ]) {
        const [issue] = rejects(set("timestamp", ts), "timestamp", ts)
        assert.include(issue!.message, "implausibly old")
      }
    })

    it("rejects a missing or numeric timestamp", () => {
      rejects(without("timestamp"), "timestamp")
      rejects(set("timestamp", now), "timestamp")
    })

    it(`accepts up to ${maxFutureSkewMillis} ms after the receiving clock, and rejects later ones`, () => {
      accepts(set("timestamp", new Date(now + maxFutureSkewMillis).toISOString()))
      const [issue] = rejects(set("timestamp", new Date(now + maxFutureSkewMillis + 1).toISOString()), "timestamp")
      assert.include(issue!.message, "future")
    })

    it("parses to epoch milliseconds", () => {
      assert.strictEqual(occurredAt({ timestamp: "2026-11-22T11:59:00.000+00:00" }), now - 60_000)
      assert.isUndefined(parseUtcTimestamp("2026-11-22T11:59:00.000+01:00"))
      assert.isUndefined(parseUtcTimestamp(42))
    })
  })

  describe("optional fields", () => {
    const cases: ReadonlyArray<readonly [string, unknown]> = [
      ["event_id", ""],
      ["event_id", "has space"],
      ["event_id", "x".repeat(257)],
      ["event_id", "café"],
      ["user_id", ""],
      ["user_id", 7],
      ["semantic_type", "Limit-Friction"],
      ["semantic_type", "x".repeat(65)],
      ["event_kind", "product action"],
      ["value", "12"],
      ["value", Number.POSITIVE_INFINITY],
      ["value", Number.NaN],
      ["properties", [1, 2]],
      ["properties", "plan=pro"],
      ["properties", null],
      ["sentiment", "happy"],
      ["sentiment_source", "human"]
    ]
    for (const [field, value] of cases) {
      it(`rejects ${field} = ${String(JSON.stringify(value)).slice(0, 24)}`, () => {
        const raw = field.startsWith("sentiment_") ? { ...set(field, value), sentiment: "positive" } : set(field, value)
        rejects(raw, field, value)
      })
    }

    for (const [field, value] of [
      ["sentiment", null],
      ["sentiment", 1],
      ["sentiment_source", {}]
    ] as const) {
      it(`rejects ${field} = ${JSON.stringify(value)} once, naming the accepted values`, () => {
        const issues = issuesOf({ ...baseEvent(), sentiment: "positive", [field]: value }).filter(
          (issue) => issue.path === field
        )
        assert.strictEqual(issues.length, 1)
        assert.include(issues[0]!.message, "one of")
      })
    }

    for (const [field, value] of [
      ["sentiment_score", 1.01],
      ["sentiment_score", -1.5],
      ["sentiment_confidence", -0.1],
      ["sentiment_confidence", 1.2]
    ] as const) {
      it(`rejects ${field} = ${value}`, () => rejects({ ...set(field, value), sentiment: "negative" }, field))
    }

    it("accepts the bounds of scores", () => {
      accepts({ ...baseEvent(), sentiment: "negative", sentiment_score: -1, sentiment_confidence: 0 })
      accepts({ ...baseEvent(), sentiment: "positive", sentiment_score: 1, sentiment_confidence: 1 })
    })

    for (const field of ["sentiment_score", "sentiment_confidence", "sentiment_source"]) {
      it(`rejects ${field} without sentiment`, () => {
        const [issue] = rejects(set(field, field === "sentiment_source" ? "ai" : 0.5), field)
        assert.include(issue!.message, "requires sentiment")
      })
    }
  })

  describe("user", () => {
    it("accepts name only, email only, or an empty object", () => {
      accepts({ ...baseEvent(), user_id: "u1", user: { name: "Ada" } })
      accepts({ ...baseEvent(), user_id: "u1", user: { email: "ada@example.com" } })
      accepts({ ...baseEvent(), user_id: "u1", user: {} })
    })

    it("rejects unknown keys in user", () => {
      const [issue] = rejects(
        { ...baseEvent(), user_id: "u1", user: { name: "Ada", phone: "+15551234567" } },
        "user.phone"
      )
      assert.include(issue!.message, "name and email")
      assert.notInclude(issue!.message, "+1555")
    })

    it("rejects a malformed email and an over-long name", () => {
      rejects({ ...baseEvent(), user_id: "u1", user: { email: "not-an-address" } }, "user.email", "not-an-address")
      rejects({ ...baseEvent(), user_id: "u1", user: { name: "n".repeat(201) } }, "user.name")
      rejects({ ...baseEvent(), user_id: "u1", user: "Ada" }, "user", "Ada")
    })

    it("rejects user without user_id", () => {
      const [issue] = rejects({ ...baseEvent(), user: { name: "Ada" } }, "user")
      assert.include(issue!.message, "user_id")
    })
  })

  it("rejects __proto__ as a top-level field (inside properties the property screen refuses it)", () => {
    rejects(
      JSON.parse(`{"__proto__":{},"event_name":"a","account_id":"b","timestamp":"2026-11-22T11:59:00Z"}`),
      "__proto__"
    )
  })

  it("keeps a valid body as it is: the decoded event is the body sent", () => {
    const raw = { ...baseEvent(), properties: { plan: "pro" } }
    const result = validateEvent(raw, now)
    assert.isTrue(Either.isRight(result))
    assert.strictEqual(Either.getOrThrow(result), raw as unknown)
  })

  it("rejects unknown top-level fields and points to properties", () => {
    const [issue] = rejects(set("plan", "pro"), "plan")
    assert.include(issue!.message, "properties")
  })

  it("reports every failing field at once", () => {
    const issues = issuesOf({
      event_name: "Bad Name",
      timestamp: "2026-11-22T13:59:00+02:00",
      value: "x",
      sentiment_score: 3,
      extra: true
    })
    const paths = issues.map((issue) => issue.path)
    for (const path of ["event_name", "account_id", "timestamp", "value", "sentiment_score", "extra"]) {
      assert.include(paths, path)
    }
  })

  describe("the body", () => {
    it('an array is a batch, refused at path "" with a pointer to rollups', () => {
      const raw = [baseEvent(), baseEvent()]
      assert.isTrue(isBatch(raw))
      assert.isFalse(isBatch(baseEvent()))
      const issues = issuesOf(raw)
      assert.strictEqual(issues.length, 1)
      assert.strictEqual(issues[0]!.path, "")
      assert.include(issues[0]!.message, "usage_rollup_recorded")
    })

    for (const raw of [null, "event", 42, true]) {
      it(`refuses a ${raw === null ? "null" : typeof raw} body at path ""`, () => {
        const issues = issuesOf(raw)
        assert.strictEqual(issues.length, 1)
        assert.strictEqual(issues[0]!.path, "")
      })
    }
  })

  it.prop(
    "no issue message quotes a received value",
    [
      fc.record({
        event_name: fc.string({ minLength: 1, maxLength: 30 }),
        account_id: fc.oneof(fc.string({ maxLength: 300 }), fc.integer()),
        timestamp: fc.string({ maxLength: 30 }),
        event_id: fc.string({ maxLength: 300 }),
        user_id: fc.oneof(fc.constant(""), fc.integer()),
        value: fc.string({ maxLength: 10 }),
        sentiment: fc.string({ maxLength: 10 })
      })
    ],
    ([fields]) => {
      const marker = (s: unknown) => `Zq${String(s)}Xj`
      const raw = {
        event_name: marker(fields.event_name),
        account_id: typeof fields.account_id === "string" ? marker(fields.account_id) + "\n" : fields.account_id,
        timestamp: marker(fields.timestamp),
        event_id: marker(fields.event_id) + " ",
        value: marker(fields.value),
        sentiment: marker(fields.sentiment)
      }
      for (const issue of issuesOf(raw)) {
        assert.notInclude(issue.message, "Zq")
        assert.notInclude(issue.message, "Xj")
      }
    }
  )
})
