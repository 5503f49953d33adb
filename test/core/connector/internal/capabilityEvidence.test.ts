/**
 * The capability evidence a successful handshake leaves: no proof clears, a proof for another
 * revision clears and is refused, a valid proof is recorded with its fingerprint and generation.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import {
  providerConnectionGeneration,
  recordCapabilities
} from "../../../../core/connector/internal/capabilityEvidence.ts"
import type { Acknowledged } from "../../../../core/connector/internal/handshake.ts"
import {
  type CapabilityEvidence,
  CapabilityRegistry,
  capabilityValidityMillis
} from "../../../../core/ports/CapabilityRegistry.ts"
import { make as makeMemory } from "../../../../adapters/memory/CapabilityRegistry.ts"
import type { HandshakeAck } from "../../../../core/protocol/messages/Handshake.ts"

const T = 1_700_000_000_000
const hash = "a".repeat(64)

const ack = (proofRevision?: number): Acknowledged => ({
  ack: {
    challenge: "c".repeat(24),
    connectionId: "conn_1",
    protocolVersion: 1,
    status: "ready",
    type: "service.customer_action.handshake_ack",
    workspaceId: "ws_1",
    ...(proofRevision === undefined
      ? {}
      : {
          paymentCapabilities: {
            connectedAccountReferenceHash: hash,
            connectionRevision: proofRevision,
            livemode: false,
            modes: ["one_time_purchase"]
          }
        })
  } as HandshakeAck,
  fingerprint: "f".repeat(64)
})

const previous: CapabilityEvidence = {
  connectionId: "conn_1",
  revision: 1,
  modes: ["setup_only"],
  livemode: false,
  connectedAccountReferenceHash: hash,
  responseFingerprint: "e".repeat(64),
  providerConnectionGeneration: `test:${hash}`,
  recordedAt: T - 1_000,
  expiresAt: T - 1_000 + capabilityValidityMillis
}

/** Runs `recordCapabilities` on a registry holding `previous`; its answer and what is left. */
const run = (acknowledged: Acknowledged, revision: number) => {
  const registry = makeMemory()
  return Effect.gen(function* () {
    yield* registry.record(previous)
    const problem = yield* recordCapabilities("conn_1", revision, acknowledged, T)
    return { problem, current: yield* registry.current("conn_1", T) }
  }).pipe(Effect.provideService(CapabilityRegistry, registry))
}

describe("providerConnectionGeneration", () => {
  it("names the environment and the connected account", () => {
    assert.strictEqual(
      providerConnectionGeneration({ connectedAccountReferenceHash: hash, livemode: false }),
      `test:${hash}`
    )
    assert.strictEqual(
      providerConnectionGeneration({ connectedAccountReferenceHash: hash, livemode: true }),
      `live:${hash}`
    )
  })
})

describe("recordCapabilities", () => {
  it.effect("an acknowledgement without proof removes the previous modes", () =>
    Effect.gen(function* () {
      const { current, problem } = yield* run(ack(), 2)
      assert.strictEqual(problem, null)
      assert.isTrue(Option.isNone(current))
    })
  )

  it.effect("a proof for another revision is refused and removes the previous modes", () =>
    Effect.gen(function* () {
      const { current, problem } = yield* run(ack(1), 2)
      assert.strictEqual(problem, "capability_revision_mismatch")
      assert.isTrue(Option.isNone(current))
    })
  )

  it.effect("a valid proof is recorded with the fingerprint, generation and validity", () =>
    Effect.gen(function* () {
      const { current, problem } = yield* run(ack(2), 2)
      assert.strictEqual(problem, null)
      assert.deepStrictEqual(
        current,
        Option.some({
          connectionId: "conn_1",
          revision: 2,
          modes: ["one_time_purchase"],
          livemode: false,
          connectedAccountReferenceHash: hash,
          responseFingerprint: "f".repeat(64),
          providerConnectionGeneration: `test:${hash}`,
          recordedAt: T,
          expiresAt: T + capabilityValidityMillis
        } satisfies CapabilityEvidence)
      )
    })
  )

  it.effect("evidence of a newer revision is not replaced by an older one's proof", () =>
    Effect.gen(function* () {
      const { current, problem } = yield* run(ack(0), 0)
      assert.strictEqual(problem, "revision_superseded")
      assert.deepStrictEqual(current, Option.some(previous))
    })
  )
})
