import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as WebCrypto from "../../../adapters/crypto/WebCrypto.ts"
import * as MemoryEventStore from "../../../adapters/memory/EventStore.ts"
import {
  BatchNotAccepted,
  type IngestRejection,
  InvalidEvent,
  NotRevenueRelevant,
  prepareEvent,
  type PreparedEvent,
  UnsafeEvent,
  withPayloadHash
} from "../../../core/ingest/Ingest.ts"
import { baseEvent, type Json, now, rollupEvent, withProperties } from "./support.ts"
import { unsafeIdentifiers } from "./unsafePayloads.ts"

const context = { id: "evt_1", workspaceId: "ws_1", now }

const accepted = (raw: unknown): PreparedEvent => {
  const result = prepareEvent(raw, context)
  if (Either.isLeft(result)) throw new Error(result.left.message)
  return result.right
}

const rejected = (raw: unknown): IngestRejection => {
  const result = prepareEvent(raw, context)
  if (Either.isRight(result)) throw new Error("expected a rejection")
  return result.left
}

describe("prepareEvent", () => {
  it("accepts, normalizes and extracts facts and the user update", () => {
    const prepared = accepted({
      ...withProperties(baseEvent(), { plan: "pro", seat_count: 5 }),
      user_id: "user_7",
      user: { name: "Ada", email: "ada@example.com" }
    })
    assert.strictEqual(prepared.stored.accountId, "acct_42")
    assert.strictEqual(prepared.stored.receivedAt, now)
    assert.deepStrictEqual(
      prepared.profileFacts.map((fact) => fact.name),
      ["plan", "seat_count"]
    )
    assert.isTrue(Option.isSome(prepared.userUpdate))
    assert.isTrue(Option.isNone(prepared.suggestedEventId))
  })

  it("an array is BatchNotAccepted", () => {
    const rejection = rejected([baseEvent()])
    assert.instanceOf(rejection, BatchNotAccepted)
    assert.strictEqual(rejection.code, "batch_not_accepted")
  })

  it("a broken contract is InvalidEvent with every issue", () => {
    const rejection = rejected({ event_name: "checkout_completed", timestamp: "nope" })
    assert.instanceOf(rejection, InvalidEvent)
    assert.strictEqual(rejection.code, "invalid_event")
    assert.deepStrictEqual(
      (rejection as InvalidEvent).issues.map((issue) => issue.path),
      ["account_id", "timestamp"]
    )
  })

  it("property bounds, rollup rules and profile forms are InvalidEvent together", () => {
    const raw = withProperties(rollupEvent(), {
      items: Array.from({ length: 21 }, (_, i) => i),
      seat_count: -1,
      unit: "GB hours"
    })
    const rejection = rejected(raw)
    assert.instanceOf(rejection, InvalidEvent)
    assert.deepStrictEqual(
      (rejection as InvalidEvent).issues.map((issue) => issue.path),
      ["properties.items", "properties.unit", "properties.seat_count"]
    )
  })

  it("unsafe data is UnsafeEvent with paths and no values", () => {
    const rejection = rejected(
      withProperties(baseEvent(), { api_key: "sk_live_4eC39HqLyjWDarjtT1zdp7dc", contact: "ada@example.com" })
    )
    assert.instanceOf(rejection, UnsafeEvent)
    assert.strictEqual(rejection.code, "unsafe_property")
    assert.deepStrictEqual(
      (rejection as UnsafeEvent).issues.map((issue) => issue.path),
      ["properties.api_key", "properties.contact"]
    )
    assert.notInclude(rejection.message, "sk_live")
    assert.notInclude(rejection.message, "ada@example.com")
  })

  describe("every issue is reported, the refusal chosen by precedence", () => {
    const issuesOf = (rejection: IngestRejection) =>
      (rejection as UnsafeEvent | InvalidEvent).issues.map(({ code, path }) => [code, path])

    for (const [field, value] of unsafeIdentifiers) {
      it(`unsafe data in ${field} (${value.slice(0, 20)}) is UnsafeEvent at ${field}, never echoed`, () => {
        const rejection = rejected({ ...baseEvent(), [field]: value })
        assert.instanceOf(rejection, UnsafeEvent)
        assert.deepStrictEqual(issuesOf(rejection), [["unsafe_property", field]])
        assert.notInclude(rejection.message, value)
      })
    }

    it("unsafe data next to a broken contract: the unsafe paths first, then every contract issue, each with its code", () => {
      const { account_id: _, ...event } = withProperties(
        { ...baseEvent(), timestamp: "yesterday", user_id: "bob@example.org" },
        {
          contact: "ada@example.com"
        }
      )
      const rejection = rejected(event)
      assert.instanceOf(rejection, UnsafeEvent)
      assert.deepStrictEqual(issuesOf(rejection), [
        ["unsafe_property", "user_id"],
        ["unsafe_property", "properties.contact"],
        ["invalid_event", "account_id"],
        ["invalid_event", "timestamp"]
      ])
      for (const value of ["bob@example.org", "ada@example.com", "yesterday"])
        assert.notInclude(rejection.message, value)
    })

    it("bounds, rollup rules and profile forms do not hide unsafe data", () => {
      const raw = withProperties(rollupEvent(), {
        items: Array.from({ length: 21 }, (_, i) => i),
        seat_count: -1,
        unit: "GB hours",
        api_key: "sk_live_4eC39HqLyjWDarjtT1zdp7dc"
      })
      assert.deepStrictEqual(issuesOf(rejected(raw)), [
        ["unsafe_property", "properties.api_key"],
        ["invalid_event", "properties.items"],
        ["invalid_event", "properties.unit"],
        ["invalid_event", "properties.seat_count"]
      ])
    })

    it("an unsafe string over 256 characters is UnsafeEvent, its length listed as well", () => {
      const trace = "Error: boom\n    at charge (billing.js:41:7)\n".repeat(10)
      const rejection = rejected(withProperties(baseEvent(), { error_detail: trace }))
      assert.instanceOf(rejection, UnsafeEvent)
      assert.deepStrictEqual(issuesOf(rejection), [
        ["unsafe_property", "properties.error_detail"],
        ["invalid_event", "properties.error_detail"]
      ])
      assert.notInclude(rejection.message, "billing.js")
    })

    it("unsafe data outranks noise, which is listed too", () => {
      const rejection = rejected(
        withProperties({ ...baseEvent(), event_name: "page_viewed" }, { contact: "ada@example.com" })
      )
      assert.instanceOf(rejection, UnsafeEvent)
      assert.deepStrictEqual(issuesOf(rejection), [
        ["unsafe_property", "properties.contact"],
        ["not_revenue_relevant", "event_name"]
      ])
    })

    it("noise outranks a broken contract: the event should not be sent at all", () => {
      const { account_id: _, ...event }: Json = { ...baseEvent(), event_name: "pricing_page_viewed", timestamp: "soon" }
      assert.instanceOf(rejected(event), NotRevenueRelevant)
    })

    it("a broken contract alone is InvalidEvent, every issue coded invalid_event", () => {
      const rejection = rejected({ ...baseEvent(), account_id: " padded", value: "12" })
      assert.instanceOf(rejection, InvalidEvent)
      assert.deepStrictEqual(issuesOf(rejection), [
        ["invalid_event", "account_id"],
        ["invalid_event", "value"]
      ])
    })
  })

  it("noise is NotRevenueRelevant with the reason", () => {
    const rejection = rejected({ ...baseEvent(), event_name: "pricing_page_viewed" })
    assert.instanceOf(rejection, NotRevenueRelevant)
    assert.strictEqual(rejection.code, "not_revenue_relevant")
    assert.include(rejection.message, "page views")
  })

  it("deeply nested properties are refused without walking them", () => {
    let deep: unknown = 1
    for (let i = 0; i < 20_000; i++) deep = { d: deep }
    const rejection = rejected({ ...baseEvent(), properties: { deep } })
    assert.instanceOf(rejection, InvalidEvent)
    assert.deepStrictEqual(
      (rejection as InvalidEvent).issues.map((issue) => issue.path),
      ["properties.deep.d.d"]
    )
  })

  it("a rollup without event_id gets its deterministic id as a hint", () => {
    const raw = rollupEvent()
    delete raw.event_id
    assert.deepStrictEqual(
      accepted(raw).suggestedEventId,
      Option.some("usage_rollup_recorded:acct_42:api:requests:2026-11-21T00:00:00.000Z:2026-11-22T00:00:00.000Z")
    )
  })

  it("no rejection message quotes a value", () => {
    const secrets: ReadonlyArray<readonly [Json, string]> = [
      [{ ...baseEvent(), account_id: " padded-acct-zz" }, "padded-acct-zz"],
      [{ ...baseEvent(), user_id: "u", user: { email: "not-an-email-zz" } }, "not-an-email-zz"],
      [withProperties(baseEvent(), { note: "private remark zz" }), "private remark zz"],
      [withProperties(baseEvent(), { seat_count: "many-zz" }), "many-zz"]
    ]
    for (const [raw, value] of secrets) assert.notInclude(rejected(raw).message, value)
  })
})

describe("withPayloadHash", () => {
  it.effect("hashes the canonical payload: a reordered retry is a Duplicate, a changed one a Conflict", () =>
    Effect.gen(function* () {
      const store = MemoryEventStore.make()
      const first = yield* withPayloadHash(accepted(baseEvent()))
      assert.match(first.payloadHash, /^[0-9a-f]{64}$/)
      const reordered = Object.fromEntries(Object.entries(baseEvent()).reverse())
      const retry = yield* withPayloadHash(prepareEvent(reordered, { ...context, id: "evt_2" }).pipe(Either.getOrThrow))
      const changed = yield* withPayloadHash(
        prepareEvent({ ...baseEvent(), value: 1 }, { ...context, id: "evt_3" }).pipe(Either.getOrThrow)
      )
      assert.strictEqual(retry.payloadHash, first.payloadHash)
      const results = yield* store.append([first, retry, changed])
      assert.deepStrictEqual(
        results.map((result) => result._tag),
        ["Stored", "Duplicate", "Conflict"]
      )
    }).pipe(Effect.provide(WebCrypto.layer))
  )
})
