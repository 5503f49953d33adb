/**
 * The payment capability gate (spec "Payment continuation rules" 2 and 8, "Payment
 * capability evidence lifecycle"), on every storage variant: a Payment action is taken at intake only
 * while the connection's active revision holds fresh, not-invalidated evidence including the
 * family's mode (409 `payment_mode_not_enabled` otherwise, nothing stored), and the dispatcher asks
 * again before every delivery attempt — when the answer changed, nothing is sent and the action ends
 * `blocked` with its reason (an `unknown_outcome` one keeps its state with `delivery_blocked`).
 *
 * The evidence is written through the `CapabilityRegistry` port exactly as the connection check
 * writes it (record a proof, clear on an acknowledgement without proof); the handshake itself is
 * covered by `connection/Capabilities.test.ts`. The customer side is a transport that counts what it
 * is sent: "the peer received nothing" is a count that did not move.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as FastCheck from "effect/FastCheck"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as NodeCrypto from "../../../adapters/crypto/NodeCrypto.ts"
import type { ActionIntake } from "../../../core/connector/Action.ts"
import { paymentFamilies } from "../../../core/protocol/OperationFamily.ts"
import { makeDispatcher } from "../../../core/connector/Dispatcher.ts"
import { intake } from "../../../core/connector/Intake.ts"
import { ActionLedger } from "../../../core/ports/ActionLedger.ts"
import { CapabilityRegistry, capabilityValidityMillis } from "../../../core/ports/CapabilityRegistry.ts"
import { ConnectionStore } from "../../../core/ports/ConnectionStore.ts"
import type { CatalogStore } from "../../../core/ports/CatalogStore.ts"
import { ConnectorTransport, TransportFailure } from "../../../core/ports/ConnectorTransport.ts"
import { Outbox } from "../../../core/ports/Outbox.ts"
import type { SecretVault } from "../../../core/ports/SecretVault.ts"
import type { PaymentMode } from "../../../core/protocol/messages/Common.ts"
import { connect, secrets } from "./dispatch/support.ts"
import { intakeInput, paymentIntake } from "../../support/deliveries.ts"
import { storageVariants, uid } from "../../support/storage.ts"

const t0 = Date.UTC(2026, 10, 22, 10, 0, 0)
const allModes = paymentFamilies.map((rule) => rule.mode)

/** A Payment action of `mode` from the fixture catalog, with its authorization snapshot. */
const paymentInput = (mode: PaymentMode): ActionIntake => paymentIntake(mode)

/** A clock the test sets; sleeping still uses the real one. */
const manualClock = () => {
  const base = Clock.make()
  const state = { now: t0 }
  const clock: Clock.Clock = {
    [Clock.ClockTypeId]: Clock.ClockTypeId,
    unsafeCurrentTimeMillis: () => state.now,
    unsafeCurrentTimeNanos: () => BigInt(state.now) * 1_000_000n,
    currentTimeMillis: Effect.sync(() => state.now),
    currentTimeNanos: Effect.sync(() => BigInt(state.now) * 1_000_000n),
    sleep: base.sleep
  }
  return { clock, state }
}

/** The customer side: counts requests; answers none (not sent), or ambiguously when told to. */
const countingTransport = () => {
  const peer = { received: 0, ambiguous: false }
  const layer = Layer.succeed(ConnectorTransport, {
    post: () =>
      Effect.suspend(() => {
        peer.received++
        return Effect.fail(
          new TransportFailure({ reason: peer.ambiguous ? "reset" : "connect", maybeDelivered: peer.ambiguous })
        )
      })
  })
  return { peer, layer }
}

/** One connection of its own per scenario, so the modes of one test share a store. */
const freshConnection = Effect.gen(function* () {
  const as = { workspaceId: uid(), connectionId: uid(), secrets }
  const revision = yield* connect("http://127.0.0.1:1/connector", as)
  return { ...as, revision }
})

type Conn = Effect.Effect.Success<typeof freshConnection>

/** Records a proof as the connection check does; `fingerprint` equal to an earlier one is a replay. */
const prove = (
  conn: Conn,
  options: {
    readonly revision?: number
    readonly modes?: ReadonlyArray<PaymentMode>
    readonly generation?: string
    readonly fingerprint?: string
  }
) =>
  Effect.gen(function* () {
    const now = yield* Clock.currentTimeMillis
    return yield* (yield* CapabilityRegistry).record({
      connectionId: conn.connectionId,
      revision: options.revision ?? conn.revision,
      modes: options.modes ?? allModes,
      livemode: options.generation?.startsWith("live:") ?? false,
      connectedAccountReferenceHash: (options.generation ?? "test:" + "a".repeat(64)).slice(5),
      responseFingerprint: options.fingerprint ?? uid(),
      providerConnectionGeneration: options.generation ?? "test:" + "a".repeat(64),
      recordedAt: now,
      expiresAt: now + capabilityValidityMillis
    })
  })

/** A successful acknowledgement without proof: the connection check clears the evidence. */
const genericAck = (conn: Conn) =>
  Effect.flatMap(CapabilityRegistry, (registry) => registry.clear(conn.connectionId, conn.revision))

/** Reconfiguration: a new revision registered and activated. */
const reconfigure = (conn: Conn) => connect("http://127.0.0.1:2/connector", conn)

const otherGeneration = "live:" + "b".repeat(64)

type CaseServices = CapabilityRegistry | ConnectionStore | SecretVault | CatalogStore

interface Case {
  readonly name: string
  /** Before intake (the action is refused) — `undefined` when the case cannot arise before intake. */
  readonly beforeIntake?: (
    conn: Conn,
    mode: PaymentMode,
    clock: ReturnType<typeof manualClock>
  ) => Effect.Effect<unknown, unknown, CaseServices>
  /** After a covered intake (the next delivery blocks) — `undefined` when it cannot arise after intake. */
  readonly afterIntake?: (
    conn: Conn,
    mode: PaymentMode,
    clock: ReturnType<typeof manualClock>
  ) => Effect.Effect<unknown, unknown, CaseServices>
  readonly intakeReason: string
  readonly blockReason?: string
}

const cases: ReadonlyArray<Case> = [
  { name: "no proof", beforeIntake: () => Effect.void, intakeReason: "payment_capability_missing" },
  {
    name: "generic handshake acknowledgement without proof",
    beforeIntake: (conn) => Effect.zipRight(prove(conn, {}), genericAck(conn)),
    afterIntake: (conn) => genericAck(conn),
    intakeReason: "payment_capability_missing",
    blockReason: "payment_capability_missing"
  },
  {
    name: "expired (exactly one hour after recording)",
    beforeIntake: (conn, _, clock) =>
      Effect.andThen(prove(conn, {}), () => (clock.state.now += capabilityValidityMillis)),
    afterIntake: (_, __, clock) => Effect.sync(() => (clock.state.now += capabilityValidityMillis)),
    intakeReason: "payment_capability_missing",
    blockReason: "payment_capability_missing"
  },
  {
    name: "proof for another revision",
    beforeIntake: (conn) =>
      Effect.gen(function* () {
        // A pending revision proved; the active one did not.
        const { revision } = yield* (yield* ConnectionStore).registerRevision({
          ...conn,
          endpoint: "http://127.0.0.1:3/connector",
          now: t0
        })
        yield* prove(conn, { revision })
      }),
    afterIntake: (conn) =>
      Effect.gen(function* () {
        const { revision } = yield* (yield* ConnectionStore).registerRevision({
          ...conn,
          endpoint: "http://127.0.0.1:3/connector",
          now: t0
        })
        yield* prove(conn, { revision })
      }),
    intakeReason: "revision_not_current",
    blockReason: "revision_not_current"
  },
  {
    name: "other mode only",
    beforeIntake: (conn, mode) => prove(conn, { modes: allModes.filter((m) => m !== mode) }),
    afterIntake: (conn, mode) => prove(conn, { modes: allModes.filter((m) => m !== mode) }),
    intakeReason: "payment_mode_not_enabled",
    blockReason: "payment_mode_not_enabled"
  },
  {
    name: "invalidated by reconfiguration",
    beforeIntake: (conn) => Effect.zipRight(prove(conn, {}), reconfigure(conn)),
    afterIntake: (conn) => reconfigure(conn),
    intakeReason: "revision_not_current",
    blockReason: "revision_not_current"
  },
  {
    name: "invalidated by a provider account change",
    // The earlier account's proof no longer counts: only the new account's modes do.
    beforeIntake: (conn, mode) =>
      Effect.zipRight(
        prove(conn, {}),
        prove(conn, { generation: otherGeneration, modes: allModes.filter((m) => m !== mode) })
      ),
    // Even a new account proving every mode does not cover an action taken under the earlier one.
    afterIntake: (conn) => prove(conn, { generation: otherGeneration }),
    intakeReason: "payment_mode_not_enabled",
    blockReason: "provider_connection_changed"
  },
  {
    name: "an exact replay does not extend freshness",
    beforeIntake: (conn, _, clock) =>
      Effect.gen(function* () {
        yield* prove(conn, { fingerprint: `replayed-${conn.connectionId}` })
        clock.state.now += capabilityValidityMillis - 60_000
        assert.strictEqual(yield* prove(conn, { fingerprint: `replayed-${conn.connectionId}` }), "replay")
        clock.state.now += 60_000
      }),
    afterIntake: (conn, _, clock) =>
      Effect.gen(function* () {
        clock.state.now += capabilityValidityMillis - 60_000
        assert.strictEqual(yield* prove(conn, { fingerprint: `replayed-${conn.connectionId}` }), "replay")
        clock.state.now += 60_000
      }),
    intakeReason: "payment_capability_missing",
    blockReason: "payment_capability_missing"
  }
]

const historyOf = (id: string) => Effect.flatMap(ActionLedger, (l) => l.history(id))
const stateOf = (id: string) =>
  Effect.map(
    Effect.flatMap(ActionLedger, (l) => l.get(id)),
    (r) => Option.getOrThrow(r).state
  )

for (const storage of storageVariants) {
  describe.skipIf(!storage.available)(`payment capability gate (${storage.name})`, () => {
    const setup = () => {
      const transport = countingTransport()
      const clock = manualClock()
      const layer = Layer.mergeAll(storage.layer(), NodeCrypto.layer, transport.layer)
      return { clock, layer, peer: transport.peer }
    }

    for (const c of cases) {
      if (c.beforeIntake !== undefined) {
        it.live(
          `${c.name}: intake refused with payment_mode_not_enabled for every mode, nothing stored`,
          () => {
            const { clock, layer, peer } = setup()
            return Effect.gen(function* () {
              for (const mode of allModes) {
                clock.state.now = t0
                const conn = yield* freshConnection
                yield* c.beforeIntake!(conn, mode, clock)
                const refused = yield* Effect.either(intake(conn.workspaceId, paymentInput(mode)))
                assert.isTrue(Either.isLeft(refused), `${mode} must be refused`)
                const error = (refused as Either.Left<{ _tag: string; mode: string; reason: string }, unknown>).left
                assert.deepStrictEqual(
                  [error._tag, error.mode, error.reason],
                  ["PaymentModeNotEnabled", mode, c.intakeReason]
                )
                // Nothing became dispatchable.
                assert.strictEqual(yield* (yield* makeDispatcher({ owner: uid() })).runOnce, 0)
              }
              assert.strictEqual(peer.received, 0)
            }).pipe(Effect.withClock(clock.clock), Effect.provide(layer))
          },
          60_000
        )
      }
      if (c.afterIntake !== undefined) {
        it.live(
          `${c.name}, after intake: the next delivery sends nothing and the action is blocked (${c.blockReason})`,
          () => {
            const { clock, layer, peer } = setup()
            return Effect.gen(function* () {
              for (const mode of allModes) {
                clock.state.now = t0
                const conn = yield* freshConnection
                yield* prove(conn, { fingerprint: `replayed-${conn.connectionId}` })
                const { actionRequestId } = yield* intake(conn.workspaceId, paymentInput(mode))
                yield* c.afterIntake!(conn, mode, clock)
                const before = peer.received
                const dispatcher = yield* makeDispatcher({ owner: uid() })
                assert.strictEqual(yield* dispatcher.runOnce, 1)
                assert.strictEqual(peer.received, before, `${mode}: nothing is sent`)
                assert.strictEqual(yield* stateOf(actionRequestId), "blocked")
                const last = (yield* historyOf(actionRequestId)).at(-1)!
                assert.deepStrictEqual(
                  [last.trigger, last.fromState, last.toState],
                  ["blocked", "dispatching", "blocked"]
                )
                assert.strictEqual((last.detail as Record<string, unknown>)["reason"], c.blockReason)
                // Terminal: the item is done, nothing is delivered again.
                const item = Option.getOrThrow(
                  yield* Effect.flatMap(Outbox, (o) => o.findByKey("service.dispatch", actionRequestId))
                )
                assert.isNotNull(item.completedAt)
                clock.state.now += 24 * 3_600_000
                assert.strictEqual(yield* dispatcher.runOnce, 0)
              }
            }).pipe(Effect.withClock(clock.clock), Effect.provide(layer))
          },
          60_000
        )
      }
    }

    it.live(
      "covered: intake takes the action and the delivery is sent",
      () => {
        const { clock, layer, peer } = setup()
        return Effect.gen(function* () {
          for (const mode of allModes) {
            const conn = yield* freshConnection
            yield* prove(conn, { modes: [mode] })
            const { actionRequestId } = yield* intake(conn.workspaceId, paymentInput(mode))
            const before = peer.received
            yield* (yield* makeDispatcher({ owner: uid() })).runOnce
            assert.strictEqual(peer.received, before + 1)
            assert.strictEqual(yield* stateOf(actionRequestId), "dispatching")
            const intakeEntry = (yield* historyOf(actionRequestId))[0]!
            assert.deepStrictEqual(intakeEntry.detail, {
              revision: conn.revision,
              providerConnectionGeneration: "test:" + "a".repeat(64)
            })
          }
        }).pipe(Effect.withClock(clock.clock), Effect.provide(layer))
      },
      60_000
    )

    it.live(
      "a retry is gated too: a delivered (unknown_outcome) action whose capability lapsed is not sent again, keeps its state, delivery_blocked",
      () => {
        const { clock, layer, peer } = setup()
        return Effect.gen(function* () {
          const conn = yield* freshConnection
          yield* prove(conn, {})
          const { actionRequestId } = yield* intake(conn.workspaceId, paymentInput("one_time_purchase"))
          const dispatcher = yield* makeDispatcher({ owner: uid() })
          peer.ambiguous = true
          yield* dispatcher.runOnce
          assert.strictEqual(peer.received, 1)
          assert.strictEqual(yield* stateOf(actionRequestId), "unknown_outcome")
          yield* genericAck(conn)
          clock.state.now += 10 * 60_000
          assert.strictEqual(yield* dispatcher.runOnce, 1)
          assert.strictEqual(peer.received, 1)
          assert.strictEqual(yield* stateOf(actionRequestId), "unknown_outcome")
          const last = (yield* historyOf(actionRequestId)).at(-1)!
          assert.deepStrictEqual(
            [last.trigger, last.fromState, last.toState],
            ["delivery_blocked", "unknown_outcome", "unknown_outcome"]
          )
          assert.deepStrictEqual(last.detail, { attempt: 2, reason: "payment_capability_missing" })
          clock.state.now += 24 * 3_600_000
          assert.strictEqual(yield* dispatcher.runOnce, 0)
        }).pipe(Effect.withClock(clock.clock), Effect.provide(layer))
      },
      60_000
    )

    it.live(
      "a non-Payment action needs no payment capability",
      () => {
        const { clock, layer, peer } = setup()
        return Effect.gen(function* () {
          const conn = yield* freshConnection
          const { actionRequestId } = yield* intake(conn.workspaceId, intakeInput())
          yield* (yield* makeDispatcher({ owner: uid() })).runOnce
          assert.strictEqual(peer.received, 1)
          assert.deepStrictEqual((yield* historyOf(actionRequestId))[0]!.detail, { revision: conn.revision })
        }).pipe(Effect.withClock(clock.clock), Effect.provide(layer))
      },
      60_000
    )
  })
}

describe("payment capability gate: property", () => {
  type Step =
    | { readonly _tag: "intake"; readonly mode: PaymentMode }
    | {
        readonly _tag: "prove"
        readonly modes: ReadonlyArray<PaymentMode>
        readonly otherRevision: boolean
        readonly otherAccount: boolean
        readonly replay: boolean
      }
    | { readonly _tag: "genericAck" }
    | { readonly _tag: "reconfigure" }
    | { readonly _tag: "advance"; readonly minutes: number }
    | { readonly _tag: "deliver" }

  const mode = FastCheck.constantFrom(...allModes)
  const step: FastCheck.Arbitrary<Step> = FastCheck.oneof(
    { arbitrary: FastCheck.record({ _tag: FastCheck.constant("intake" as const), mode }), weight: 4 },
    FastCheck.record({
      _tag: FastCheck.constant("prove" as const),
      modes: FastCheck.uniqueArray(mode, { maxLength: 5 }),
      otherRevision: FastCheck.boolean(),
      otherAccount: FastCheck.boolean(),
      replay: FastCheck.boolean()
    }),
    FastCheck.constant({ _tag: "genericAck" as const }),
    FastCheck.constant({ _tag: "reconfigure" as const }),
    FastCheck.record({ _tag: FastCheck.constant("advance" as const), minutes: FastCheck.integer({ min: 1, max: 90 }) }),
    { arbitrary: FastCheck.constant({ _tag: "deliver" as const }), weight: 3 }
  )
  /** Every run starts covered for every mode, so actions are taken and the steps can take it away. */
  const start: Step = { _tag: "prove", modes: allModes, otherRevision: false, otherAccount: false, replay: false }

  it.live(
    "no Payment action is ever sent without a covering, fresh capability at the time of that delivery (memory)",
    () =>
      Effect.promise(() =>
        FastCheck.assert(
          FastCheck.asyncProperty(FastCheck.array(step, { minLength: 1, maxLength: 25 }), async (random) => {
            const steps = [start, ...random]
            const clock = manualClock()
            const sent: Array<{ readonly actionRequestId: string; readonly at: number }> = []
            const transport = Layer.succeed(ConnectorTransport, {
              post: (request) =>
                Effect.suspend(() => {
                  sent.push({
                    actionRequestId: JSON.parse(new TextDecoder().decode(request.body)).actionRequestId,
                    at: clock.state.now
                  })
                  return Effect.fail(new TransportFailure({ reason: "reset", maybeDelivered: true }))
                })
            })
            const program = Effect.gen(function* () {
              const conn = yield* freshConnection
              const registry = yield* CapabilityRegistry
              const store = yield* ConnectionStore
              // The model: what the test last proved, and under which account each action was taken.
              const taken = new Map<
                string,
                { readonly mode: PaymentMode; readonly revision: number; readonly generation: string }
              >()
              let account = "test:" + "a".repeat(64)
              let lastFingerprint = uid()
              const dispatcher = yield* makeDispatcher({ owner: uid() })
              for (const s of steps) {
                switch (s._tag) {
                  case "intake": {
                    const result = yield* Effect.either(intake(conn.workspaceId, paymentInput(s.mode)))
                    if (Either.isRight(result)) {
                      // Taken: what held at that moment is what every later delivery must still find.
                      const active = Option.getOrThrow(yield* store.getById(conn.connectionId)).revisions.find(
                        (r) => r.state === "active"
                      )!
                      const held = Option.getOrThrow(yield* registry.current(conn.connectionId, clock.state.now))
                      taken.set(result.right.actionRequestId, {
                        mode: s.mode,
                        revision: active.revision,
                        generation: held.providerConnectionGeneration
                      })
                    }
                    break
                  }
                  case "prove": {
                    // An exact replay is the same response: same proof, same account.
                    if (s.otherAccount && !s.replay)
                      account = account.startsWith("test:") ? "live:" + "b".repeat(64) : "test:" + "a".repeat(64)
                    const active = Option.getOrThrow(yield* store.getById(conn.connectionId)).revisions.find(
                      (r) => r.state === "active"
                    )!
                    if (!s.replay) lastFingerprint = uid()
                    yield* prove(
                      { ...conn, revision: active.revision },
                      {
                        revision: active.revision + (s.otherRevision ? 1 : 0),
                        modes: s.modes,
                        generation: account,
                        fingerprint: lastFingerprint
                      }
                    )
                    break
                  }
                  case "genericAck": {
                    const active = Option.getOrThrow(yield* store.getById(conn.connectionId)).revisions.find(
                      (r) => r.state === "active"
                    )!
                    yield* registry.clear(conn.connectionId, active.revision)
                    break
                  }
                  case "reconfigure":
                    yield* reconfigure(conn)
                    break
                  case "advance":
                    clock.state.now += s.minutes * 60_000
                    break
                  case "deliver": {
                    const before = sent.length
                    yield* dispatcher.runOnce
                    for (const delivery of sent.slice(before)) {
                      const action = taken.get(delivery.actionRequestId)!
                      const evidence = yield* registry.current(conn.connectionId, delivery.at)
                      const active = Option.getOrThrow(yield* store.getById(conn.connectionId)).revisions.find(
                        (r) => r.state === "active"
                      )
                      assert.isTrue(Option.isSome(evidence), "sent without evidence")
                      const e = Option.getOrThrow(evidence)
                      assert.isTrue(delivery.at < e.expiresAt, "sent with expired evidence")
                      assert.strictEqual(e.revision, active?.revision, "sent with evidence of another revision")
                      assert.strictEqual(action.revision, active?.revision, "sent on a revision no longer active")
                      assert.strictEqual(
                        e.providerConnectionGeneration,
                        action.generation,
                        "sent under another provider account"
                      )
                      assert.include(e.modes, action.mode, "sent without its mode")
                    }
                    // Let every retry come due for the next round.
                    clock.state.now += 6 * 60_000
                    break
                  }
                }
              }
            })
            await Effect.runPromise(
              program.pipe(
                Effect.withClock(clock.clock),
                Effect.provide(Layer.mergeAll(storageVariants[0]!.layer(), NodeCrypto.layer, transport))
              ) as Effect.Effect<void, unknown, never>
            )
          }),
          { numRuns: 60 }
        )
      ),
    120_000
  )
})
