import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as fc from "fast-check"
import * as Duration from "effect/Duration"
import * as TestClock from "effect/TestClock"
import { layerMemory, make as makeMemory } from "../../../adapters/memory/AccountProfileStore.ts"
import { AccountProfileStore, type LoginActivity } from "../../../core/ports/AccountProfileStore.ts"
import {
  extractProfileFacts,
  isLoginActivity,
  loginActivityOf,
  profileFactIssues,
  readActiveUsers
} from "../../../core/ingest/Profile.ts"
import { baseEvent, type Json, now, valid, withProperties } from "./support.ts"

const at = now - 60_000
const facts = (raw: Json, id = "evt_1") =>
  extractProfileFacts(valid(raw), id).map(({ name, value }) => [name, value] as const)
const issues = (properties: Json) => profileFactIssues(valid(withProperties(baseEvent(), properties)))

describe("Profile", () => {
  it("extracts every fact with the event's time and Accord's id", () => {
    const extracted = extractProfileFacts(
      valid(
        withProperties(baseEvent(), {
          account_created_at: "2024-03-01T09:30:00Z",
          plan: "pro_annual",
          account_status: "active",
          subscription_status: "past_due",
          is_in_trial: false,
          trial_started_at: "2026-11-01T00:00:00Z",
          trial_ends_at: "2026-11-15T00:00:00+00:00",
          user_count: 12,
          active_user_count: 9,
          seat_count: 15,
          member_count: 0
        })
      ),
      "evt_9"
    )
    assert.deepStrictEqual(
      extracted.map(({ name, value }) => [name, value]),
      [
        ["signup_at", "2024-03-01T09:30:00.000Z"],
        ["plan", "pro_annual"],
        ["account_status", "active"],
        ["subscription_status", "past_due"],
        ["is_in_trial", false],
        ["trial_started_at", "2026-11-01T00:00:00.000Z"],
        ["trial_ends_at", "2026-11-15T00:00:00.000Z"],
        ["user_count", 12],
        ["active_user_count", 9],
        ["seat_count", 15],
        ["member_count", 0]
      ]
    )
    for (const fact of extracted) {
      assert.strictEqual(fact.observedAt, at)
      assert.strictEqual(fact.sourceEventId, "evt_9")
    }
  })

  for (const name of ["account_created_at", "signup_at", "customer_created_at"]) {
    it(`reads the signup date from ${name}`, () => {
      assert.deepStrictEqual(facts(withProperties(baseEvent(), { [name]: "2024-03-01T09:30:00Z" })), [
        ["signup_at", "2024-03-01T09:30:00.000Z"]
      ])
    })
  }

  it("takes the first of plan, plan_name, current_plan", () => {
    assert.deepStrictEqual(facts(withProperties(baseEvent(), { current_plan: "c", plan_name: "b", plan: "a" })), [
      ["plan", "a"]
    ])
    assert.deepStrictEqual(facts(withProperties(baseEvent(), { current_plan: "c", plan_name: "b" })), [["plan", "b"]])
    assert.deepStrictEqual(facts(withProperties(baseEvent(), { current_plan: "c" })), [["plan", "c"]])
  })

  it("no facts from an event without fact properties", () => {
    assert.deepStrictEqual(facts(withProperties(baseEvent(), { export_format: "csv" })), [])
    assert.deepStrictEqual(facts(baseEvent()), [])
  })

  describe("login activity", () => {
    const login = (event_name: string, extra: Json = {}): Json => ({
      ...baseEvent(),
      event_name,
      semantic_type: "login",
      ...extra
    })

    for (const name of ["user_logged_in", "session_started"]) {
      it(`${name} with semantic_type login sets last_login_at and last_login_user_id`, () => {
        assert.deepStrictEqual(facts(login(name, { user_id: "user_7" })), [
          ["last_login_at", "2026-11-22T11:59:00.000Z"],
          ["last_login_user_id", "user_7"]
        ])
      })
    }

    it("without user_id, only last_login_at", () => {
      assert.deepStrictEqual(facts(login("user_logged_in")), [["last_login_at", "2026-11-22T11:59:00.000Z"]])
    })

    it("needs semantic_type login and a login event name", () => {
      assert.deepStrictEqual(facts({ ...baseEvent(), event_name: "user_logged_in", user_id: "u" }), [])
      assert.deepStrictEqual(facts({ ...baseEvent(), event_name: "report_exported", semantic_type: "login" }), [])
      assert.isFalse(isLoginActivity({ event_name: "session_started", semantic_type: "usage" }))
    })

    it("a login with a user_id is recorded for the active-user counts; one without, or another event, is not", () => {
      const context = { workspaceId: "ws_1", sourceEventId: "evt_9" }
      assert.deepStrictEqual(
        loginActivityOf(valid(login("session_started", { user_id: "user_7" })), context),
        Option.some({
          workspaceId: "ws_1",
          accountId: "acct_42",
          userId: "user_7",
          observedAt: at,
          sourceEventId: "evt_9"
        })
      )
      assert.isTrue(Option.isNone(loginActivityOf(valid(login("user_logged_in")), context)))
      assert.isTrue(
        Option.isNone(loginActivityOf(valid({ ...baseEvent(), event_name: "user_logged_in", user_id: "u" }), context))
      )
    })
  })

  describe("active users", () => {
    const day = 86_400_000
    const login = (userId: string, observedAt: number, accountId = "acct_42"): LoginActivity => ({
      workspaceId: "ws_1",
      accountId,
      userId,
      observedAt,
      sourceEventId: `evt_${userId}_${observedAt}`
    })
    const read = (accountId = "acct_42") =>
      Effect.map(readActiveUsers("ws_1", accountId), (counts) =>
        counts.map(({ asOf, name, value }) => [name, value, asOf])
      )

    it.effect("distinct users whose last login is within 7 and 30 days of the read, as the read's clock moves", () =>
      Effect.gen(function* () {
        yield* TestClock.setTime(now)
        yield* (yield* AccountProfileStore).recordLogins([
          login("ada", now - 1),
          login("ada", now - 40 * day),
          login("bob", now - 7 * day),
          login("cy", now - 7 * day - 1),
          login("dee", now - 30 * day),
          login("eve", now - 31 * day),
          login("fay", now - day, "acct_other")
        ])
        assert.deepStrictEqual(yield* read(), [
          ["active_users_7d", 2, now],
          ["active_users_30d", 4, now]
        ])
        yield* TestClock.adjust(Duration.days(2))
        assert.deepStrictEqual(yield* read(), [
          ["active_users_7d", 1, now + 2 * day],
          ["active_users_30d", 3, now + 2 * day]
        ])
      }).pipe(Effect.provide(layerMemory))
    )

    it.effect("no counts for an account without recorded logins (no signal is not zero)", () =>
      Effect.gen(function* () {
        yield* TestClock.setTime(now)
        yield* (yield* AccountProfileStore).recordLogins([login("ada", now - 90 * day)])
        assert.deepStrictEqual(yield* read(), [
          ["active_users_7d", 0, now],
          ["active_users_30d", 0, now]
        ])
        assert.deepStrictEqual(yield* read("acct_nobody"), [])
      }).pipe(Effect.provide(layerMemory))
    )
  })

  describe("values of the wrong form are field issues", () => {
    const wrong: ReadonlyArray<readonly [string, unknown]> = [
      ["account_created_at", "yesterday"],
      ["signup_at", "2024-03-01T09:30:00+01:00"],
      ["customer_created_at", 1709285400],
      ["plan", "Pro Annual"],
      ["plan_name", "PRO"],
      ["current_plan", "x".repeat(65)],
      ["account_status", 1],
      ["subscription_status", "past due"],
      ["is_in_trial", "yes"],
      ["trial_started_at", "2026-11-01"],
      ["trial_ends_at", null],
      ["user_count", -1],
      ["active_user_count", 1.5],
      ["seat_count", "15"],
      ["member_count", ["a", "b"]]
    ]
    for (const [name, value] of wrong) {
      it(`${name} = ${JSON.stringify(value).slice(0, 20)}`, () => {
        const found = issues({ [name]: value })
        assert.deepStrictEqual(
          found.map((issue) => issue.path),
          [`properties.${name}`]
        )
        assert.include(found[0]!.message, "profile fact")
        if (typeof value === "string") assert.notInclude(found[0]!.message, value)
      })
    }

    it("accepts the forms", () => {
      assert.deepStrictEqual(
        issues({ plan: "enterprise-2024", account_status: "active", is_in_trial: true, seat_count: 0 }),
        []
      )
      assert.deepStrictEqual(profileFactIssues(valid(baseEvent())), [])
    })
  })

  it.prop(
    "extraction is deterministic and independent of property order",
    [
      fc.record(
        {
          plan: fc.constantFrom("free", "pro", "team_annual"),
          plan_name: fc.constantFrom("basic", "growth"),
          seat_count: fc.nat(1000),
          user_count: fc.nat(1000),
          is_in_trial: fc.boolean(),
          trial_ends_at: fc.constantFrom("2026-12-01T00:00:00Z", "2027-01-01T00:00:00.000Z"),
          signup_at: fc.constantFrom("2024-03-01T09:30:00Z"),
          customer_created_at: fc.constantFrom("2023-01-01T00:00:00Z")
        },
        { requiredKeys: [] }
      )
    ],
    ([properties]) => {
      const forward = withProperties(baseEvent(), properties)
      const backward = withProperties(baseEvent(), Object.fromEntries(Object.entries(properties).reverse()))
      const first = extractProfileFacts(valid(forward), "evt_1")
      assert.deepStrictEqual(extractProfileFacts(valid(forward), "evt_1"), first)
      assert.deepStrictEqual(extractProfileFacts(valid(backward), "evt_1"), first)
    }
  )

  it.effect("facts from out-of-order events converge in the store (the storage's rule)", () =>
    Effect.gen(function* () {
      const older = extractProfileFacts(
        valid(withProperties({ ...baseEvent(), timestamp: "2026-11-20T00:00:00Z" }, { plan: "free" })),
        "evt_a"
      )
      const newer = extractProfileFacts(valid(withProperties(baseEvent(), { plan: "pro" })), "evt_b")
      const inOrder = makeMemory()
      const reversed = makeMemory()
      yield* inOrder.applyFacts("ws", "acct_42", older)
      yield* inOrder.applyFacts("ws", "acct_42", newer)
      yield* reversed.applyFacts("ws", "acct_42", newer)
      yield* reversed.applyFacts("ws", "acct_42", older)
      const a = Option.getOrThrow(yield* inOrder.get("ws", "acct_42"))
      const b = Option.getOrThrow(yield* reversed.get("ws", "acct_42"))
      assert.deepStrictEqual(a, b)
      assert.strictEqual(a.facts.find((fact) => fact.name === "plan")!.value, "pro")
    })
  )
})
