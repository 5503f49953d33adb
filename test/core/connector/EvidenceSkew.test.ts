/**
 * Evidence matching under clock skew (docs/decisions.md, "Evidence bound to one action"): a Direct
 * API event's `timestamp` is written by the customer's clock, the action's intake time by the
 * service's. Evidence for an action verifies it whatever the customer's clock within the protocol's
 * skew (five minutes either way) and whether it arrives before or after the completion; evidence
 * for another action, journey, version or account never does, and neither does evidence the
 * service held before the action existed.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as TestClock from "effect/TestClock"
import * as fc from "fast-check"
import * as NodeCrypto from "../../../adapters/crypto/NodeCrypto.ts"
import type { ActionIntake } from "../../../core/connector/Action.ts"
import { makeCompletionReceiver } from "../../../core/connector/CompletionIntake.ts"
import { evidenceSchedule, makeEvidenceWatcher } from "../../../core/connector/EvidenceWatcher.ts"
import { intake } from "../../../core/connector/Intake.ts"
import { evidenceSkewMillis, isEventEvidence } from "../../../core/connector/ObservedEvidence.ts"
import { buildFeatureAccessEvent, featureAccessEventId } from "../../../core/ingest/FeatureAccess.ts"
import { ActionLedger } from "../../../core/ports/ActionLedger.ts"
import { EventStore, type StoredEvent } from "../../../core/ports/EventStore.ts"
import { actionRequestIdProperty } from "../../../core/protocol/ActionEvent.ts"
import { maxSkewMillis } from "../../../core/protocol/Verification.ts"
import { formatTimestamp } from "../../../core/protocol/Timestamp.ts"
import * as Metrics from "../../../core/telemetry/Metrics.ts"
import { storageVariants } from "../../support/storage.ts"
import { connect, intakeInput, signedCompletion, workspaceId } from "./dispatch/support.ts"

const own = intakeInput()
const otherJourney = "9e5a7b9c-1d2f-4b4c-8e6a-8f0b2c4d6e8a"
const otherVersion = "9a7c9d1e-3f4b-4d6e-8a8c-0b2d4e6f8a0c"

/** How an event names the action it reports on (or does not). */
type Naming = "event_id" | "property" | "none"
const namings: ReadonlyArray<Naming> = ["event_id", "property", "none"]

/** How an event differs from evidence for the action under test. */
type Other = "action" | "journey" | "version" | "account" | "event_name"
const others: ReadonlyArray<Other> = ["action", "journey", "version", "account", "event_name"]

interface EventSpec {
  readonly actionRequestId: string
  readonly naming: Naming
  readonly occurredAt: number
  readonly receivedAt: number
  readonly accountId?: string
  readonly journeyId?: string
  readonly versionId?: string
  readonly name?: string
}

/**
 * The `entitlement_active` event a customer backend sends for `actionRequestId` (the server SDK's
 * helper for `event_id`; the property or no naming at all as other backends may), as stored.
 */
const storedEvent = (spec: EventSpec): StoredEvent => {
  const built = buildFeatureAccessEvent({
    accountId: spec.accountId ?? own.accountId,
    featureKey: "reports",
    journeyId: spec.journeyId ?? own.binding.journeyId,
    versionId: spec.versionId ?? own.binding.publishedVersionId,
    occurredAt: formatTimestamp(spec.occurredAt),
    actionRequestId: spec.actionRequestId
  })
  const id = globalThis.crypto.randomUUID()
  const eventId = spec.naming === "event_id" ? featureAccessEventId({ ...spec, featureKey: "reports" }) : `evt_${id}`
  const eventName = spec.name ?? built.event_name
  const body = {
    ...built,
    event_id: eventId,
    event_name: eventName,
    properties: {
      ...built.properties,
      ...(spec.naming === "property" ? { [actionRequestIdProperty]: spec.actionRequestId } : {})
    }
  }
  return {
    id,
    workspaceId,
    eventId,
    accountId: body.account_id,
    eventName,
    occurredAt: spec.occurredAt,
    receivedAt: spec.receivedAt,
    payloadHash: "d".repeat(64),
    body
  }
}

/** The event differing from evidence for `actionRequestId` in `other`. */
const otherEvent = (spec: EventSpec, other: Other): EventSpec => {
  switch (other) {
    case "action":
      // names an action, another one (an event naming none cannot name another)
      return {
        ...spec,
        actionRequestId: globalThis.crypto.randomUUID(),
        naming: spec.naming === "none" ? "event_id" : spec.naming
      }
    case "journey":
      return { ...spec, journeyId: otherJourney }
    case "version":
      return { ...spec, versionId: otherVersion }
    case "account":
      return { ...spec, accountId: "acct_other" }
    case "event_name":
      return { ...spec, name: "feature_adopted" }
  }
}

const skews = fc.integer({ min: -maxSkewMillis, max: maxSkewMillis })

describe("evidence bound to one action, under clock skew (the rule)", () => {
  const intakeAt = Date.parse("2026-11-29T03:00:00.000Z")
  const actionRequestId = "6f1d2c3b-4a5e-4f60-8a7b-9c0d1e2f3a4b"
  const record = { accountId: own.accountId, actionRequestId, createdAt: intakeAt }
  const evidence = (spec: EventSpec) => isEventEvidence(storedEvent(spec), "entitlement_state", record, own)

  it("the window is the protocol's skew", () => {
    assert.strictEqual(evidenceSkewMillis, maxSkewMillis)
    assert.strictEqual(maxSkewMillis, 300_000)
  })

  it.prop(
    "evidence for this action verifies it: any customer clock within ±300 s, any delay, arriving any time after the intake",
    [
      skews,
      fc.integer({ min: 0, max: 3_600_000 }),
      fc.integer({ min: 0, max: 86_400_000 }),
      fc.constantFrom(...namings)
    ],
    ([skew, performedAfter, arrivedAfter, naming]) => {
      // Performed `performedAfter` ms after the intake (service time), stamped by a clock `skew` off.
      const performedAt = intakeAt + performedAfter
      assert.isTrue(
        evidence({
          actionRequestId,
          naming,
          occurredAt: performedAt + skew,
          receivedAt: performedAt + arrivedAfter
        })
      )
    },
    { fastCheck: { numRuns: 300 } }
  )

  it.prop(
    "evidence for another action, journey, version, account or event name never verifies it",
    [
      skews,
      fc.integer({ min: 0, max: 3_600_000 }),
      fc.integer({ min: 0, max: 86_400_000 }),
      fc.constantFrom(...namings),
      fc.constantFrom(...others)
    ],
    ([skew, performedAfter, arrivedAfter, naming, other]) => {
      const performedAt = intakeAt + performedAfter
      const spec = { actionRequestId, naming, occurredAt: performedAt + skew, receivedAt: performedAt + arrivedAfter }
      assert.isTrue(evidence(spec))
      assert.isFalse(evidence(otherEvent(spec, other)))
    },
    { fastCheck: { numRuns: 300 } }
  )

  it.prop(
    "an earlier action's evidence naming no action, received before this intake, never verifies it, whatever its timestamp says",
    [skews, fc.integer({ min: 1, max: 3_600_000 })],
    ([skew, receivedBefore]) => {
      const performedAt = intakeAt - receivedBefore
      assert.isFalse(
        evidence({
          actionRequestId,
          naming: "none",
          occurredAt: Math.max(performedAt + skew, intakeAt - maxSkewMillis),
          receivedAt: performedAt
        })
      )
    }
  )

  it("an event stamped further before the intake than the protocol's skew is not evidence, even naming the action", () => {
    for (const naming of namings) {
      const spec = { actionRequestId, naming, receivedAt: intakeAt + 1_000 }
      assert.isTrue(evidence({ ...spec, occurredAt: intakeAt - maxSkewMillis }))
      assert.isFalse(evidence({ ...spec, occurredAt: intakeAt - maxSkewMillis - 1 }))
    }
  })

  it("an event naming two different actions (property and event_id) is evidence for neither", () => {
    const other = "7f1d2c3b-4a5e-4f60-8a7b-9c0d1e2f3a4b"
    const event = storedEvent({ actionRequestId, naming: "event_id", occurredAt: intakeAt, receivedAt: intakeAt })
    const both = {
      ...event,
      body: {
        ...(event.body as Record<string, unknown>),
        properties: {
          ...(event.body as { properties: Record<string, unknown> }).properties,
          [actionRequestIdProperty]: other
        }
      }
    }
    assert.isFalse(isEventEvidence(both, "entitlement_state", record, own))
    assert.isFalse(isEventEvidence(both, "entitlement_state", { ...record, actionRequestId: other }, own))
  })

  it("the action id matches in any letter case", () => {
    const spec = { naming: "property" as const, occurredAt: intakeAt, receivedAt: intakeAt }
    assert.isTrue(evidence({ ...spec, actionRequestId: actionRequestId.toUpperCase() }))
  })
})

/** An accepted action (its acknowledgement applied directly) and a signed-completion body for it. */
const acceptedAction = (input: ActionIntake = own) =>
  Effect.gen(function* () {
    const { actionRequestId } = yield* intake(workspaceId, input)
    const ledger = yield* ActionLedger
    const record = Option.getOrThrow(yield* ledger.get(actionRequestId))
    yield* ledger.transition({
      actionRequestId,
      expectedVersion: record.version,
      toState: "accepted",
      at: Date.now(),
      history: { at: Date.now(), trigger: "acknowledgement", detail: {} }
    })
    const completion = {
      type: "service.customer_action.completion",
      protocolVersion: 1,
      workspaceId,
      actionRequestId,
      providerIdempotencyKey: record.providerIdempotencyKey,
      providerReference: "trial_ext_981",
      completionId: `cmp_${actionRequestId}`,
      completedAt: formatTimestamp(Date.now()),
      outcome: "succeeded",
      evidence: { entitlement: "trial_extended", reasonCode: "extended", source: "entitlement_state" }
    }
    return { actionRequestId, completion }
  })

/** One look by the evidence watcher at every due watch. */
const watchOnce = Effect.gen(function* () {
  const watcher = yield* makeEvidenceWatcher({ owner: `watch-${globalThis.crypto.randomUUID()}` })
  return yield* Effect.forEach(yield* watcher.lease(100), watcher.look)
})

const stateOf = (actionRequestId: string) =>
  Effect.map(
    Effect.flatMap(ActionLedger, (ledger) => ledger.get(actionRequestId)),
    (record) => Option.getOrThrow(record).state
  )

/**
 * The customer backend, its clock `skew` ms off the service's: performs the action now and sends
 * its `entitlement_active` event (received now, stamped by its own clock), before or after its
 * `succeeded` completion. Returns the action's state once the evidence watcher has looked.
 */
const run = (options: {
  readonly skew: number
  readonly arrival: "before" | "after"
  readonly event: (actionRequestId: string, occurredAt: number) => EventSpec
  readonly earlier?: boolean
}) =>
  Effect.gen(function* () {
    yield* connect("http://127.0.0.1:1/connector")
    const receive = yield* makeCompletionReceiver
    const events = yield* EventStore
    const earlier = options.earlier ? yield* acceptedAction() : undefined
    const { actionRequestId, completion } = yield* acceptedAction()
    const send = Effect.suspend(() => {
      const now = Date.now()
      return events.append([
        storedEvent(options.event(earlier?.actionRequestId ?? actionRequestId, now + options.skew))
      ])
    })
    if (options.arrival === "before") yield* send
    const receipt = yield* receive(yield* signedCompletion(completion))
    if (options.arrival === "after") {
      assert.strictEqual(receipt.state, "pending")
      yield* send
    }
    yield* watchOnce
    return yield* stateOf(actionRequestId)
  }).pipe(Effect.provide(Layer.mergeAll(storageVariants[0]!.layer(), NodeCrypto.layer)))

describe("evidence bound to one action, under clock skew (completion intake and evidence watcher)", () => {
  it.live("the issue's case: a customer clock 2 s behind stamps the evidence before the intake; it verifies", () =>
    Effect.gen(function* () {
      for (const arrival of ["before", "after"] as const) {
        const state = yield* run({
          skew: -2_000,
          arrival,
          event: (actionRequestId, occurredAt) => ({
            actionRequestId,
            naming: "event_id",
            occurredAt,
            receivedAt: Date.now()
          })
        })
        assert.strictEqual(state, "verified", arrival)
      }
    })
  )

  it.live(
    "stale evidence: an earlier action's entitlement of the same account and journey, stamped after this intake by a clock ahead, does not verify it",
    () =>
      Effect.gen(function* () {
        for (const naming of namings) {
          const state = yield* run({
            skew: 120_000,
            arrival: "before",
            earlier: true,
            // The earlier action's event: naming it, or naming none but received before this intake.
            event: (earlierId, occurredAt) => ({
              actionRequestId: earlierId,
              naming,
              occurredAt,
              receivedAt: Date.now() - (naming === "none" ? 60_000 : 0)
            })
          })
          assert.strictEqual(state, "pending", naming)
        }
      })
  )

  it.live.prop(
    "evidence for this action always verifies it, for a customer clock anywhere in ±300 s, before or after the completion",
    [skews, fc.constantFrom("before" as const, "after" as const), fc.constantFrom(...namings)],
    ([skew, arrival, naming]) =>
      Effect.map(
        run({
          skew,
          arrival,
          event: (actionRequestId, occurredAt) => ({ actionRequestId, naming, occurredAt, receivedAt: Date.now() })
        }),
        (state) => assert.strictEqual(state, "verified")
      ),
    { fastCheck: { numRuns: 30 } }
  )

  it.live.prop(
    "evidence for another action, journey, version or account never verifies it, before or after the completion",
    [skews, fc.constantFrom("before" as const, "after" as const), fc.constantFrom(...namings)],
    ([skew, arrival, naming]) =>
      Effect.forEach(
        others,
        (other) =>
          Effect.map(
            run({
              skew,
              arrival,
              event: (actionRequestId, occurredAt) =>
                otherEvent({ actionRequestId, naming, occurredAt, receivedAt: Date.now() }, other)
            }),
            (state) => assert.strictEqual(state, "pending", other)
          ),
        { discard: true }
      ),
    { fastCheck: { numRuns: 12 } }
  )
})

const overdueCount = Effect.map(
  Metric.value(Metric.tagged(Metrics.evidenceOverdue, "type", "entitlement_state")),
  (state) => state.count
)

describe("no action pending for ever: the evidence window", () => {
  it.effect(
    "a pending action whose window passes without its evidence becomes evidence_overdue (counted); evidence or a new claim still moves it",
    () =>
      Effect.gen(function* () {
        yield* TestClock.setTime(Date.now())
        yield* connect("http://127.0.0.1:1/connector")
        const receive = yield* makeCompletionReceiver
        const events = yield* EventStore
        const { actionRequestId, completion } = yield* acceptedAction()
        assert.strictEqual((yield* receive(yield* signedCompletion(completion))).state, "pending")
        assert.deepStrictEqual(yield* watchOnce, ["waiting"])
        // Within the window nothing changes; once it has passed, the next look ends the watch.
        yield* TestClock.adjust(evidenceSchedule.deadlineMillis - 60_000)
        assert.deepStrictEqual(yield* watchOnce, ["waiting"])
        const before = yield* overdueCount
        yield* TestClock.adjust(120_000)
        assert.deepStrictEqual(yield* watchOnce, ["ended"])
        assert.strictEqual(yield* stateOf(actionRequestId), "evidence_overdue")
        assert.strictEqual((yield* overdueCount) - before, 1)
        const history = yield* Effect.flatMap(ActionLedger, (l) => l.history(actionRequestId))
        assert.deepStrictEqual(
          history.map((h) => `${h.trigger}:${h.toState}`),
          [
            "intake:dispatching",
            "acknowledgement:accepted",
            "completion:pending",
            "evidence_wait_ended:evidence_overdue"
          ]
        )
        assert.deepStrictEqual(yield* watchOnce, [])
        // The evidence arrives late and a redelivered success claim brings it: verified.
        const now = yield* Clock.currentTimeMillis
        yield* events.append([storedEvent({ actionRequestId, naming: "event_id", occurredAt: now, receivedAt: now })])
        const again = { ...completion, completionId: `cmp_again_${actionRequestId}` }
        assert.strictEqual((yield* receive(yield* signedCompletion(again))).state, "verified")
      }).pipe(Effect.provide(Layer.mergeAll(storageVariants[0]!.layer(), NodeCrypto.layer)))
  )

  it.effect(
    "an overdue action's new success claim without the evidence opens a new window: pending, watched again",
    () =>
      Effect.gen(function* () {
        yield* TestClock.setTime(Date.now())
        yield* connect("http://127.0.0.1:1/connector")
        const receive = yield* makeCompletionReceiver
        const { actionRequestId, completion } = yield* acceptedAction()
        yield* receive(yield* signedCompletion(completion))
        yield* TestClock.adjust(evidenceSchedule.deadlineMillis + 60_000)
        assert.deepStrictEqual(yield* watchOnce, ["ended"])
        const again = { ...completion, completionId: `cmp_again_${actionRequestId}` }
        assert.strictEqual((yield* receive(yield* signedCompletion(again))).state, "pending")
        assert.deepStrictEqual(yield* watchOnce, ["waiting"])
      }).pipe(Effect.provide(Layer.mergeAll(storageVariants[0]!.layer(), NodeCrypto.layer)))
  )
})
