/**
 * The payment gate's property: no Payment action is ever delivered without a covering, fresh
 * capability at the time of that delivery. Random sequences of proofs (replays included), generic
 * acknowledgements, provider account changes, reconfigurations, clock moves, intakes and delivery
 * rounds run against the real intake, dispatcher and memory storage; every request that reaches the
 * (ambiguous, so every action is retried) customer transport is checked against an independent model
 * of the spec's evidence lifecycle at that instant.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as FastCheck from "effect/FastCheck"
import * as Layer from "effect/Layer"
import * as NodeCrypto from "../../../adapters/crypto/NodeCrypto.ts"
import { paymentFamilies } from "../../../core/protocol/OperationFamily.ts"
import { makeDispatcher } from "../../../core/connector/Dispatcher.ts"
import { intake } from "../../../core/connector/Intake.ts"
import { CapabilityRegistry, capabilityValidityMillis } from "../../../core/ports/CapabilityRegistry.ts"
import { ConnectorTransport, TransportFailure } from "../../../core/ports/ConnectorTransport.ts"
import type { PaymentMode } from "../../../core/protocol/messages/Common.ts"
import { paymentIntake } from "../../support/deliveries.ts"
import { storageVariants, uid } from "../../support/storage.ts"
import { connect, secrets } from "./dispatch/support.ts"

const modes = paymentFamilies.map((rule) => rule.mode)

type Step =
  | {
      readonly _tag: "Prove"
      readonly modes: ReadonlyArray<PaymentMode>
      readonly generation: "g1" | "g2"
      readonly replay: boolean
    }
  | { readonly _tag: "GenericAck" }
  | { readonly _tag: "Reconfigure" }
  | { readonly _tag: "Advance"; readonly minutes: number }
  | { readonly _tag: "Intake"; readonly mode: PaymentMode }
  | { readonly _tag: "Deliver" }

const step: FastCheck.Arbitrary<Step> = FastCheck.oneof(
  {
    weight: 3,
    arbitrary: FastCheck.record({
      modes: FastCheck.subarray(modes),
      generation: FastCheck.constantFrom("g1" as const, "g2" as const),
      replay: FastCheck.boolean()
    }).map((p): Step => ({ _tag: "Prove", ...p }))
  },
  { weight: 1, arbitrary: FastCheck.constant<Step>({ _tag: "GenericAck" }) },
  { weight: 1, arbitrary: FastCheck.constant<Step>({ _tag: "Reconfigure" }) },
  {
    weight: 2,
    arbitrary: FastCheck.integer({ min: 0, max: 75 }).map((minutes): Step => ({ _tag: "Advance", minutes }))
  },
  { weight: 4, arbitrary: FastCheck.constantFrom(...modes).map((mode): Step => ({ _tag: "Intake", mode })) },
  { weight: 4, arbitrary: FastCheck.constant<Step>({ _tag: "Deliver" }) }
)

/** The spec's lifecycle, written out: what the service may rely on at `now`. */
interface Model {
  now: number
  activeRevision: number
  evidence:
    | {
        modes: ReadonlyArray<PaymentMode>
        revision: number
        generation: string
        recordedAt: number
        fingerprint: string
      }
    | undefined
  /** Per action: its mode, bound revision and the generation it was taken under. */
  readonly actions: Map<string, { readonly mode: PaymentMode; readonly revision: number; readonly generation: string }>
  readonly violations: Array<string>
  sent: number
}

const covers = (
  model: Model,
  action: { readonly mode: PaymentMode; readonly revision: number; readonly generation: string }
) => {
  const e = model.evidence
  return (
    e !== undefined &&
    e.revision === model.activeRevision &&
    action.revision === model.activeRevision &&
    e.modes.includes(action.mode) &&
    model.now < e.recordedAt + capabilityValidityMillis &&
    e.generation === action.generation
  )
}

describe("payment capability at every delivery (property)", () => {
  it.live(
    "no Payment action is delivered without a covering, fresh capability at that delivery",
    () =>
      Effect.promise(() =>
        FastCheck.assert(
          FastCheck.asyncProperty(FastCheck.array(step, { minLength: 4, maxLength: 18 }), async (steps) => {
            const model: Model = {
              now: Date.UTC(2026, 10, 22, 10),
              activeRevision: 0,
              evidence: undefined,
              actions: new Map(),
              violations: [],
              sent: 0
            }
            const clock: Clock.Clock = {
              [Clock.ClockTypeId]: Clock.ClockTypeId,
              unsafeCurrentTimeMillis: () => model.now,
              unsafeCurrentTimeNanos: () => BigInt(model.now) * 1_000_000n,
              currentTimeMillis: Effect.sync(() => model.now),
              currentTimeNanos: Effect.sync(() => BigInt(model.now) * 1_000_000n),
              sleep: Clock.make().sleep
            }
            const transport = Layer.succeed(ConnectorTransport, {
              post: (request) =>
                Effect.suspend(() => {
                  const body = JSON.parse(new TextDecoder().decode(request.body)) as {
                    readonly actionRequestId?: string
                  }
                  const action =
                    body.actionRequestId === undefined ? undefined : model.actions.get(body.actionRequestId)
                  model.sent++
                  if (action === undefined) model.violations.push(`an unknown action was sent at ${model.now}`)
                  else if (!covers(model, action))
                    model.violations.push(`${action.mode} sent without a covering fresh capability at ${model.now}`)
                  // Ambiguous: the action stays retryable, so later rounds deliver it again.
                  return Effect.fail(new TransportFailure({ reason: "reset", maybeDelivered: true }))
                })
            })
            const program = Effect.gen(function* () {
              const as = { workspaceId: uid(), connectionId: uid(), secrets }
              model.activeRevision = yield* connect("http://127.0.0.1:1/connector", as)
              const registry = yield* CapabilityRegistry
              const dispatcher = yield* makeDispatcher({ owner: uid() })
              for (const s of steps) {
                switch (s._tag) {
                  case "Prove": {
                    const fingerprint = s.replay && model.evidence !== undefined ? model.evidence.fingerprint : uid()
                    const generation = `test:${s.generation}`
                    const recorded = yield* registry.record({
                      connectionId: as.connectionId,
                      revision: model.activeRevision,
                      modes: s.modes,
                      livemode: false,
                      connectedAccountReferenceHash: s.generation.repeat(32),
                      responseFingerprint: fingerprint,
                      providerConnectionGeneration: generation,
                      recordedAt: model.now,
                      expiresAt: model.now + capabilityValidityMillis
                    })
                    // An exact replay changes nothing and does not extend freshness.
                    if (recorded === "recorded")
                      model.evidence = {
                        modes: s.modes,
                        revision: model.activeRevision,
                        generation,
                        recordedAt: model.now,
                        fingerprint
                      }
                    break
                  }
                  case "GenericAck":
                    yield* registry.clear(as.connectionId, model.activeRevision)
                    model.evidence = undefined
                    break
                  case "Reconfigure":
                    model.activeRevision = yield* connect("http://127.0.0.1:2/connector", as)
                    break
                  case "Advance":
                    model.now += s.minutes * 60_000
                    break
                  case "Intake": {
                    const taken = yield* Effect.either(intake(as.workspaceId, paymentIntake(s.mode)))
                    if (Either.isRight(taken)) {
                      model.actions.set(taken.right.actionRequestId, {
                        mode: s.mode,
                        revision: model.activeRevision,
                        generation: model.evidence?.generation ?? "none"
                      })
                    }
                    break
                  }
                  case "Deliver":
                    // Due retries too: jump past the longest backoff step first.
                    model.now += 6 * 60_000
                    yield* dispatcher.runOnce
                    break
                }
              }
            })
            await Effect.runPromise(
              program.pipe(
                Effect.withClock(clock),
                Effect.provide(Layer.mergeAll(storageVariants[0]!.layer(), NodeCrypto.layer, transport))
              )
            )
            assert.deepStrictEqual(model.violations, [])
          }),
          { numRuns: 40, seed: 15 }
        )
      ),
    120_000
  )
})
