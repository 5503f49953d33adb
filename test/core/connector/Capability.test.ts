/**
 * The one payment capability rule, alone: evidence covers a mode only while fresh (under one hour),
 * bound to the connection's active revision, and including the mode; an intent must fit the mode.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import {
  coversPaymentMode,
  currentCapabilities,
  evidenceCurrent,
  continuationProblem,
  paymentCapabilityVerdict
} from "../../../core/connector/Capability.ts"
import {
  type CapabilityEvidence,
  CapabilityRegistry,
  capabilityValidityMillis
} from "../../../core/ports/CapabilityRegistry.ts"
import { make as makeMemory } from "../../../adapters/memory/CapabilityRegistry.ts"
import type { Connection, ConnectionRevision } from "../../../core/ports/ConnectionStore.ts"
import type { PaymentMode } from "../../../core/protocol/messages/Common.ts"
import { paymentRule } from "../../../core/protocol/OperationFamily.ts"

const recordedAt = 1_700_000_000_000

const evidence: CapabilityEvidence = {
  connectionId: "conn_1",
  revision: 2,
  modes: ["one_time_purchase", "setup_only"],
  livemode: false,
  connectedAccountReferenceHash: "a".repeat(64),
  responseFingerprint: "f".repeat(64),
  providerConnectionGeneration: `test:${"a".repeat(64)}`,
  recordedAt,
  expiresAt: recordedAt + capabilityValidityMillis
}

describe("coversPaymentMode", () => {
  const cases: ReadonlyArray<{
    readonly name: string
    readonly evidence: Option.Option<CapabilityEvidence>
    readonly activeRevision: number | undefined
    readonly mode: PaymentMode
    readonly now: number
    readonly covers: boolean
  }> = [
    {
      name: "no evidence",
      evidence: Option.none(),
      activeRevision: 2,
      mode: "one_time_purchase",
      now: recordedAt,
      covers: false
    },
    {
      name: "fresh, bound, mode included",
      evidence: Option.some(evidence),
      activeRevision: 2,
      mode: "one_time_purchase",
      now: recordedAt,
      covers: true
    },
    {
      name: "fresh until just under one hour",
      evidence: Option.some(evidence),
      activeRevision: 2,
      mode: "setup_only",
      now: recordedAt + capabilityValidityMillis - 1,
      covers: true
    },
    {
      name: "expired at exactly one hour",
      evidence: Option.some(evidence),
      activeRevision: 2,
      mode: "one_time_purchase",
      now: recordedAt + capabilityValidityMillis,
      covers: false
    },
    {
      name: "recorded for another revision",
      evidence: Option.some(evidence),
      activeRevision: 3,
      mode: "one_time_purchase",
      now: recordedAt,
      covers: false
    },
    {
      name: "no active revision",
      evidence: Option.some(evidence),
      activeRevision: undefined,
      mode: "one_time_purchase",
      now: recordedAt,
      covers: false
    },
    {
      name: "mode missing",
      evidence: Option.some(evidence),
      activeRevision: 2,
      mode: "new_subscription",
      now: recordedAt,
      covers: false
    }
  ]
  for (const c of cases) {
    it(c.name, () => {
      assert.strictEqual(
        coversPaymentMode(c.evidence, { activeRevision: c.activeRevision, mode: c.mode, now: c.now }),
        c.covers
      )
    })
  }

  it("evidence is current only while unexpired and bound to the active revision", () => {
    assert.isTrue(evidenceCurrent(evidence, 2, recordedAt))
    assert.isFalse(evidenceCurrent(evidence, 2, evidence.expiresAt))
    assert.isFalse(evidenceCurrent(evidence, 1, recordedAt))
  })
})

describe("continuationProblem", () => {
  const request = (family: string, mode: PaymentMode | undefined) =>
    ({
      action: { operation: { family } },
      ...(mode === undefined ? {} : { payment: { mode } })
    }) as unknown as Parameters<typeof continuationProblem>[0]

  it("setup-only mounts a setup intent, a one-time purchase a payment intent, the others either", () => {
    const table: ReadonlyArray<readonly [PaymentMode, "setup" | "payment", boolean]> = [
      ["setup_only", "setup", true],
      ["setup_only", "payment", false],
      ["one_time_purchase", "payment", true],
      ["one_time_purchase", "setup", false],
      ["new_subscription", "setup", true],
      ["new_subscription", "payment", true],
      ["existing_subscription_change", "setup", true],
      ["existing_subscription_change", "payment", true],
      ["recover_payment", "setup", true],
      ["recover_payment", "payment", true]
    ]
    for (const [mode, intent, fits] of table) {
      const family = paymentRule(mode).family
      assert.strictEqual(
        continuationProblem(request(family, mode), { intent }),
        fits ? undefined : "intent_does_not_fit_mode",
        `${mode} / ${intent}`
      )
    }
  })

  it("only a Payment action with a snapshot of its family's mode: not_a_payment_action otherwise", () => {
    assert.strictEqual(
      continuationProblem(request("extend_trial", undefined), { intent: "payment" }),
      "not_a_payment_action"
    )
    assert.strictEqual(
      continuationProblem(request("payment.one_time_purchase", undefined), { intent: "payment" }),
      "not_a_payment_action"
    )
    assert.strictEqual(
      continuationProblem(request("payment.one_time_purchase", "setup_only"), { intent: "payment" }),
      "not_a_payment_action"
    )
    assert.strictEqual(
      continuationProblem(request("refund_everything", undefined), { intent: "payment" }),
      "not_a_payment_action"
    )
  })
})

describe("currentCapabilities", () => {
  const revision = (n: number, state: ConnectionRevision["state"]): ConnectionRevision => ({
    revision: n,
    endpoint: `https://r${n}.example`,
    state,
    createdAt: recordedAt,
    activatedAt: null,
    retiredAt: null
  })
  const connection = (active: number): Connection => ({
    connectionId: "conn_1",
    workspaceId: "ws_1",
    createdAt: recordedAt,
    revisions: [revision(2, active === 2 ? "active" : "pending"), revision(1, active === 1 ? "active" : "replaced")],
    lastCheck: null
  })

  it.effect("answers the recorded evidence only while it counts for the connection's active revision", () =>
    Effect.gen(function* () {
      const registry = makeMemory()
      yield* registry.record(evidence)
      const current = (c: Connection, now: number) =>
        Effect.provideService(currentCapabilities(c, now), CapabilityRegistry, registry)
      assert.deepStrictEqual(yield* current(connection(2), recordedAt), Option.some(evidence))
      assert.deepStrictEqual(yield* current(connection(1), recordedAt), Option.none())
      assert.deepStrictEqual(yield* current(connection(2), evidence.expiresAt), Option.none())
    })
  )
})

describe("paymentCapabilityVerdict", () => {
  const at = { activeRevision: 2, mode: "one_time_purchase" as const, now: recordedAt }
  const table: ReadonlyArray<
    readonly [string, Option.Option<CapabilityEvidence>, Parameters<typeof paymentCapabilityVerdict>[1], string]
  > = [
    ["covered", Option.some(evidence), at, "covered"],
    [
      "covered, bound revision and generation agree",
      Option.some(evidence),
      { ...at, boundRevision: 2, generation: evidence.providerConnectionGeneration },
      "covered"
    ],
    ["no evidence", Option.none(), at, "payment_capability_missing"],
    ["no active revision", Option.some(evidence), { ...at, activeRevision: undefined }, "revision_not_current"],
    [
      "the action's revision is no longer active",
      Option.some(evidence),
      { ...at, boundRevision: 1 },
      "revision_not_current"
    ],
    ["evidence of another revision", Option.some(evidence), { ...at, activeRevision: 3 }, "revision_not_current"],
    [
      "expired at exactly one hour",
      Option.some(evidence),
      { ...at, now: evidence.expiresAt },
      "payment_capability_expired"
    ],
    [
      "another provider connection generation",
      Option.some(evidence),
      { ...at, generation: "live:" + "b".repeat(64) },
      "provider_connection_changed"
    ],
    ["mode not included", Option.some(evidence), { ...at, mode: "new_subscription" }, "payment_mode_not_enabled"]
  ]
  for (const [name, e, when, verdict] of table) {
    it(name, () => {
      assert.strictEqual(paymentCapabilityVerdict(e, when), verdict)
      // The verdict agrees with the one rule whenever no binding is given.
      if (when.boundRevision === undefined && when.generation === undefined) {
        assert.strictEqual(verdict === "covered", coversPaymentMode(e, when))
      }
    })
  }
})
