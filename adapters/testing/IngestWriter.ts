import { assert, describe } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as NodeCrypto from "../crypto/NodeCrypto.ts"
import { AccountProfileStore } from "../../core/ports/AccountProfileStore.ts"
import type { ApiKeyScope } from "../../core/ports/ApiKeyStore.ts"
import { EventStore } from "../../core/ports/EventStore.ts"
import { FeatureGateStore } from "../../core/ports/FeatureGateStore.ts"
import { prepareEvent, withPayloadHash } from "../../core/ingest/Ingest.ts"
import { IngestWriter, IngestWriterNow, type Submission, type WriteResult } from "../../core/ports/IngestWriter.ts"
import type { StorageError } from "../../core/ports/StorageError.ts"
import { Transactor } from "../../core/ports/Transactor.ts"
import { meterKey } from "../../core/ingest/UsageRollup.ts"
import { onOneStore } from "./internal/oneStore.ts"
import { uid } from "./internal/uid.ts"

const NOW = Date.UTC(2026, 10, 20, 12)
const minutesAgo = (n: number) => new Date(NOW - n * 60_000).toISOString()

/** An accepted event as the ingest route submits it (the real rules prepare it). */
const submission = (workspaceId: string, raw: Record<string, unknown>, keyScope: ApiKeyScope = "ingest") =>
  Effect.gen(function* () {
    const prepared = prepareEvent(raw, { id: uid("evt-"), workspaceId, now: NOW })
    if (Either.isLeft(prepared)) return yield* Effect.dieMessage(`test event refused: ${prepared.left._tag}`)
    const event = prepared.right
    const meter = meterKey(event.event)
    const unit = event.event.properties?.["unit"]
    return {
      stored: yield* withPayloadHash(event),
      normalized: event,
      keyScope,
      ...(Option.isSome(meter) && typeof unit === "string" ? { meter: { meterKey: meter.value, unit } } : {})
    } satisfies Submission
  }).pipe(Effect.provide(NodeCrypto.layer))

const feature = (overrides: Record<string, unknown> = {}) => ({
  event_name: "feature_used",
  account_id: "acct_1",
  timestamp: minutesAgo(30),
  event_id: uid("feature_used:"),
  properties: { feature_key: "reports" },
  ...overrides
})

const rollup = (unit: string, eventId = uid("usage_rollup_recorded:")) => ({
  event_name: "usage_rollup_recorded",
  semantic_type: "usage",
  event_kind: "product_action",
  account_id: "acct_1",
  timestamp: new Date(Date.UTC(2026, 10, 19)).toISOString(),
  event_id: eventId,
  value: 10,
  properties: {
    product_key: "api",
    metric_key: "requests",
    unit,
    usage_start: new Date(Date.UTC(2026, 10, 18)).toISOString(),
    usage_end: new Date(Date.UTC(2026, 10, 19)).toISOString(),
    aggregation_grain: "day",
    source_system: "billing_job"
  }
})

/**
 * The IngestWriter contract: a batch of accepted events commits with its facts, users, gates and
 * meter units, all or nothing; duplicates and refusals write nothing.
 */
export const suite = (
  name: string,
  layer: () => Layer.Layer<IngestWriter | EventStore | AccountProfileStore | FeatureGateStore, unknown>,
  forms: ReadonlyArray<WriteForm> = ["write"]
) => {
  for (const form of forms) contract(name, layer, form)
}

/**
 * How the contract writes a batch: `write`; `bulk`, `write` as a bulk import calls it (`{ bulk:
 * true }`, in a transaction of the `Transactor`, which the layer must then provide); or the
 * callback form `writeNow` (which the writer under test must then have: a writer without it fails
 * every test).
 */
export type WriteForm = "write" | "bulk" | "writeNow"

const writeWith = (form: WriteForm) => (batch: ReadonlyArray<Submission>) =>
  Effect.flatMap(IngestWriter, (writer) => {
    if (form === "write") return writer.write(batch)
    if (form === "bulk")
      return Effect.flatMap(Effect.serviceOption(Transactor), (transactor) =>
        Option.isNone(transactor)
          ? Effect.dieMessage("the bulk form writes in a transaction: this layer has no Transactor")
          : transactor.value.withTransaction(writer.write(batch, { bulk: true }))
      )
    return Effect.flatMap(Effect.serviceOption(IngestWriterNow), (now) =>
      Option.isNone(now)
        ? Effect.dieMessage("this IngestWriter has no callback form (IngestWriterNow)")
        : Effect.async<ReadonlyArray<WriteResult>, StorageError>((resume) => now.value.writeNow(batch, resume))
    )
  })

const contract = (
  name: string,
  layer: () => Layer.Layer<IngestWriter | EventStore | AccountProfileStore | FeatureGateStore, unknown>,
  form: WriteForm
) =>
  describe(`IngestWriter contract (${name}, ${form})`, () => {
    onOneStore(layer, (it) => {
      const write = writeWith(form)
      const tags = (results: ReadonlyArray<{ readonly _tag: string }>) => results.map((r) => r._tag)
      const fact = (workspaceId: string, accountId: string, name: string) =>
        Effect.map(
          Effect.flatMap(AccountProfileStore, (store) => store.get(workspaceId, accountId)),
          (profile) =>
            Option.getOrUndefined(
              Option.flatMap(profile, (p) => Option.fromNullable(p.facts.find((f) => f.name === name)))
            )
        )
      const stored = (workspaceId: string) =>
        Effect.flatMap(EventStore, (store) => store.list({ workspaceId, limit: 100 }))

      it.effect("new events are stored with their facts; within a batch the newest fact wins whatever the order", () =>
        Effect.gen(function* () {
          const ws = uid("ws-")
          const newer = yield* submission(
            ws,
            feature({ timestamp: minutesAgo(5), properties: { plan: "team", seat_count: 9 } })
          )
          const older = yield* submission(ws, feature({ timestamp: minutesAgo(50), properties: { plan: "starter" } }))
          const other = yield* submission(ws, feature({ account_id: "acct_2", properties: { plan: "pro" } }))
          assert.deepStrictEqual(tags(yield* write([newer, older, other])), ["Stored", "Stored", "Stored"])
          assert.strictEqual((yield* stored(ws)).length, 3)
          assert.strictEqual((yield* fact(ws, "acct_1", "plan"))?.value, "team")
          assert.strictEqual((yield* fact(ws, "acct_1", "seat_count"))?.value, 9)
          assert.strictEqual((yield* fact(ws, "acct_2", "plan"))?.value, "pro")
          assert.deepStrictEqual(yield* write([]), [])
        })
      )

      it.effect("text outside the Basic Multilingual Plane (a surrogate pair) is stored and read back as sent", () =>
        Effect.gen(function* () {
          const ws = uid("ws-")
          const sent = yield* submission(
            ws,
            feature({ account_id: "acct_\ud83d\ude00", properties: { tier_label: "gold \ud83d\ude00" } })
          )
          assert.deepStrictEqual(tags(yield* write([sent])), ["Stored"])
          const [read] = yield* stored(ws)
          assert.strictEqual(read!.accountId, "acct_\ud83d\ude00")
          assert.deepStrictEqual(read!.body, sent.stored.body)
        })
      )

      it.effect("text with backslashes, tabs, quotes and `\\N` is stored and read back as sent", () =>
        Effect.gen(function* () {
          const ws = uid("ws-")
          const awkward = 'a\\b\tc "e" \\N \\\\ \\t \\r\\n ü'
          const sent = yield* submission(
            ws,
            feature({
              account_id: "acct_\\N",
              event_id: uid("feature_used:\\t\\"),
              properties: { tier_label: awkward, plan_codes: [awkward, "\\"] }
            })
          )
          assert.deepStrictEqual(tags(yield* write([sent])), ["Stored"])
          const [read] = yield* stored(ws)
          assert.strictEqual(read!.accountId, "acct_\\N")
          assert.strictEqual(read!.eventId, sent.stored.eventId)
          assert.deepStrictEqual(read!.body, sent.stored.body)
        })
      )

      it.effect("a stored newer fact is kept when an older event arrives later", () =>
        Effect.gen(function* () {
          const ws = uid("ws-")
          yield* write([yield* submission(ws, feature({ timestamp: minutesAgo(5), properties: { plan: "team" } }))])
          assert.deepStrictEqual(
            tags(
              yield* write([
                yield* submission(ws, feature({ timestamp: minutesAgo(50), properties: { plan: "starter" } }))
              ])
            ),
            ["Stored"]
          )
          assert.strictEqual((yield* fact(ws, "acct_1", "plan"))?.value, "team")
        })
      )

      it.effect(
        "duplicates and conflicts, in the batch or against stored events, write nothing and keep the original",
        () =>
          Effect.gen(function* () {
            const ws = uid("ws-")
            const original = feature({ properties: { plan: "team" } })
            const first = yield* submission(ws, original)
            assert.deepStrictEqual(tags(yield* write([first])), ["Stored"])
            const retry = yield* submission(ws, original)
            const conflicting = yield* submission(ws, {
              ...original,
              properties: { plan: "enterprise" },
              timestamp: minutesAgo(1)
            })
            const twiceA = feature({ properties: { plan: "a" } })
            const inBatch1 = yield* submission(ws, twiceA)
            const inBatch2 = yield* submission(ws, twiceA)
            const results = yield* write([retry, conflicting, inBatch1, inBatch2])
            assert.deepStrictEqual(tags(results), ["Duplicate", "Conflict", "Stored", "Duplicate"])
            assert.strictEqual((results[0] as { event: { id: string } }).event.id, first.stored.id)
            assert.strictEqual((yield* stored(ws)).length, 2)
            // The conflicting event's newer fact was not applied.
            assert.notStrictEqual((yield* fact(ws, "acct_1", "plan"))?.value, "enterprise")
          })
      )

      it.effect("a user update is applied with its event; a field left out keeps its value", () =>
        Effect.gen(function* () {
          const ws = uid("ws-")
          const user = (name: string | undefined, email: string | undefined, minutes: number) =>
            submission(
              ws,
              feature({
                timestamp: minutesAgo(minutes),
                user_id: "user_7",
                user: { ...(name === undefined ? {} : { name }), ...(email === undefined ? {} : { email }) }
              })
            )
          assert.deepStrictEqual(tags(yield* write([yield* user("Ada", "ada@example.com", 30)])), ["Stored"])
          assert.deepStrictEqual(tags(yield* write([yield* user("Ada L.", undefined, 20), yield* plainFeature(ws)])), [
            "Stored",
            "Stored"
          ])
          const record = yield* Effect.flatMap(AccountProfileStore, (store) => store.getUser(ws, "user_7"))
          assert.isTrue(Option.isSome(record))
          if (Option.isSome(record)) {
            assert.strictEqual(record.value.name?.value, "Ada L.")
            assert.strictEqual(record.value.email?.value, "ada@example.com")
          }
        })
      )

      it.effect("logins of stored events are recorded, the newest per user; a duplicate login records nothing", () =>
        Effect.gen(function* () {
          const ws = uid("ws-")
          const profiles = yield* AccountProfileStore
          const login = (userId: string, minutes: number, extra: Record<string, unknown> = {}) =>
            submission(ws, {
              event_name: "user_logged_in",
              semantic_type: "login",
              account_id: "acct_1",
              user_id: userId,
              timestamp: minutesAgo(minutes),
              event_id: uid("user_logged_in:"),
              ...extra
            })
          const old = yield* login("user_1", 60 * 24 * 10)
          const recent = yield* login("user_1", 5)
          // One of them also updates the user, so the batch takes the transaction path too.
          const other = yield* login("user_2", 60 * 24 * 20, { user: { name: "Grace" } })
          assert.deepStrictEqual(tags(yield* write([recent, old])), ["Stored", "Stored"])
          assert.deepStrictEqual(tags(yield* write([other, yield* login("user_3", 1)])), ["Stored", "Stored"])
          const weekAgo = NOW - 7 * 24 * 60 * 60_000
          const monthAgo = NOW - 30 * 24 * 60 * 60_000
          assert.deepStrictEqual(yield* profiles.countActiveUsers(ws, "acct_1", [weekAgo, monthAgo]), [2, 3])
          // Replaying a login event (same event_id) is a duplicate and changes nothing.
          assert.deepStrictEqual(tags(yield* write([yield* submission(ws, { ...old.normalized.event })])), [
            "Duplicate"
          ])
          assert.deepStrictEqual(yield* profiles.countActiveUsers(ws, "acct_1", [weekAgo]), [2])
        })
      )

      it.effect(
        "entitlement_active from an ingest key unlocks the matching checking gate; from another scope it does not",
        () =>
          Effect.gen(function* () {
            const ws = uid("ws-")
            const gates = yield* FeatureGateStore
            const journeyId = "66666666-7777-4888-9999-aaaaaaaaaaaa"
            const versionId = "12345678-90ab-4cde-8f01-234567890abc"
            const gateId = uid("gate-")
            yield* gates.create({
              id: gateId,
              workspaceId: ws,
              accountId: "acct_1",
              journeyId,
              versionId,
              featureKey: "advanced_reports",
              startedAt: NOW - 60 * 60_000,
              createdAt: NOW - 60 * 60_000
            })
            const access = (keyScope: ApiKeyScope) =>
              submission(
                ws,
                {
                  event_id: uid("entitlement_active:"),
                  event_name: "entitlement_active",
                  account_id: "acct_1",
                  timestamp: minutesAgo(1),
                  semantic_type: "activation",
                  event_kind: "product_action",
                  properties: {
                    feature_key: "advanced_reports",
                    funnel_journey_id: journeyId,
                    funnel_version_id: versionId
                  }
                },
                keyScope
              )
            assert.deepStrictEqual(tags(yield* write([yield* access("developer:read")])), ["Stored"])
            assert.strictEqual(Option.getOrThrow(yield* gates.get(ws, gateId)).state, "checking")
            const unlocking = yield* access("ingest")
            assert.deepStrictEqual(tags(yield* write([yield* plainFeature(ws), unlocking])), ["Stored", "Stored"])
            const gate = Option.getOrThrow(yield* gates.get(ws, gateId))
            assert.strictEqual(gate.state, "unlocked")
            assert.strictEqual(gate.unlockEventId, unlocking.stored.id)
          })
      )

      it.effect("a meter keeps its first unit: another unit is refused and not stored, also within one batch", () =>
        Effect.gen(function* () {
          const ws = uid("ws-")
          const results = yield* write([
            yield* submission(ws, rollup("request")),
            yield* submission(ws, rollup("token"))
          ])
          assert.deepStrictEqual(tags(results), ["Stored", "UnitChanged"])
          assert.include((results[1] as { issue: { message: string } }).issue.message, "pricing_version")
          assert.deepStrictEqual(tags(yield* write([yield* submission(ws, rollup("token"))])), ["UnitChanged"])
          assert.deepStrictEqual(tags(yield* write([yield* submission(ws, rollup("request"))])), ["Stored"])
          assert.strictEqual((yield* stored(ws)).length, 2)
        })
      )

      it.effect("a rollup that is not stored (conflict, duplicate) does not claim its meter's unit", () =>
        Effect.gen(function* () {
          const ws = uid("ws-")
          const taken = uid("usage_rollup_recorded:")
          assert.deepStrictEqual(tags(yield* write([yield* submission(ws, feature({ event_id: taken }))])), ["Stored"])
          // Same event_id, another payload: a conflict, so the typo unit must not stick to the meter.
          assert.deepStrictEqual(tags(yield* write([yield* submission(ws, rollup("exprt", taken))])), ["Conflict"])
          assert.deepStrictEqual(tags(yield* write([yield* submission(ws, rollup("export"))])), ["Stored"])
        })
      )

      it.effect(
        "a rollup refused only for a unit claimed by a batch-mate that was not stored is written after all",
        () =>
          Effect.gen(function* () {
            const ws = uid("ws-")
            const taken = uid("usage_rollup_recorded:")
            assert.deepStrictEqual(tags(yield* write([yield* submission(ws, feature({ event_id: taken }))])), [
              "Stored"
            ])
            // The first rollup is a conflict (its event_id is taken) with a typo unit; the second is right.
            const results = yield* write([
              yield* submission(ws, rollup("exprt", taken)),
              yield* submission(ws, rollup("export"))
            ])
            assert.deepStrictEqual(tags(results), ["Conflict", "Stored"])
            // The meter now keeps the unit of the stored rollup.
            assert.deepStrictEqual(tags(yield* write([yield* submission(ws, rollup("exprt"))])), ["UnitChanged"])
          })
      )

      it.effect("concurrent batches sharing event ids store each id once", () =>
        Effect.gen(function* () {
          const ws = uid("ws-")
          const events = Array.from({ length: 20 }, (_, i) =>
            feature({ event_id: `shared:${i}`, properties: { plan: `p${i}` } })
          )
          const batches = yield* Effect.forEach(
            Array.from({ length: 8 }, (_, b) => b),
            (b) => Effect.forEach(events, (raw, i) => submission(ws, (i + b) % 2 === 0 ? raw : { ...raw }))
          )
          const results = yield* Effect.all(
            batches.map((batch) => write(batch)),
            { concurrency: "unbounded" }
          )
          const storedCount = results.flat().filter((r) => r._tag === "Stored").length
          assert.strictEqual(storedCount, 20)
          assert.isTrue(results.flat().every((r) => r._tag === "Stored" || r._tag === "Duplicate"))
          assert.strictEqual((yield* stored(ws)).length, 20)
        })
      )
    })
  })

const plainFeature = (workspaceId: string) => submission(workspaceId, feature())
