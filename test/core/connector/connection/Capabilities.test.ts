/**
 * Payment capability evidence from the handshake (spec "Payment capability evidence lifecycle"),
 * over real HTTP on loopback against real storage, on the `TestClock` (the service and the peer
 * share it): a valid proof is recorded with connector identity, revision, response fingerprint and
 * provider connection generation; an acknowledgement without proof clears the modes; a proof for
 * another revision enables nothing; the evidence expires after one hour; an exact replay does not
 * extend it; a slow check of a revision replaced meanwhile never undoes the newer revision's evidence.
 */
import { assert } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as TestClock from "effect/TestClock"
import { CapabilityRegistry, capabilityValidityMillis } from "../../../../core/ports/CapabilityRegistry.ts"
import { ConnectionStore, type ConnectionStoreService } from "../../../../core/ports/ConnectionStore.ts"
import { currentCapabilities } from "../../../../core/connector/Capability.ts"
import { checkConnection } from "../../../../core/connector/ConnectionCheck.ts"
import type { PaymentCapabilities } from "../../../../core/protocol/messages/Handshake.ts"
import { parseTimestamp } from "../../../../core/protocol/Timestamp.ts"
import { warnIfSkipped } from "../../../support/postgres.ts"
import {
  ackPeer,
  kitPeer,
  onEachStorage,
  outbound,
  registerCore,
  type PeerResponse,
  registerEndpoint,
  runCheck,
  sha256Hex,
  showConnector,
  startService
} from "./support.ts"

warnIfSkipped("payment capabilities")

const start = Date.UTC(2026, 10, 22, 10, 0, 0)

const accountHash = "3a6f0e0b6c5d4e8f9a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f6071"

const proof = (revision: number, overrides: Partial<PaymentCapabilities> = {}): PaymentCapabilities => ({
  connectedAccountReferenceHash: accountHash,
  connectionRevision: revision,
  livemode: false,
  modes: ["one_time_purchase", "setup_only"],
  ...overrides
})

/** A peer whose proof the test can change between checks; it remembers its responses. */
const provingPeer = (initial: PaymentCapabilities | undefined) =>
  Effect.gen(function* () {
    const state = {
      proof: initial,
      responses: [] as Array<PeerResponse>,
      replay: undefined as PeerResponse | undefined
    }
    const url = yield* ackPeer({
      ack: (ack) => (state.proof === undefined ? ack : { ...ack, paymentCapabilities: state.proof }),
      replay: () => state.replay,
      onExchange: (_, response) => void state.responses.push(response)
    })
    return { url, state }
  })

const minutes = (n: number) => `${n} minutes` as const

/** A service whose connection was just activated by a peer proving `initial`. */
const checkedWith = (initial: PaymentCapabilities | undefined) =>
  Effect.gen(function* () {
    const service = yield* startService()
    const peer = yield* provingPeer(initial)
    yield* registerEndpoint(service, peer.url)
    const first = (yield* runCheck(service)).json
    return { service, peer, first }
  })

onEachStorage("payment capability proof", { live: true }, (it) => {
  it.scoped("a valid proof is recorded with revision, fingerprint and provider generation, and enables its modes", () =>
    Effect.gen(function* () {
      const { first, peer, service } = yield* checkedWith(proof(0))
      assert.deepStrictEqual(
        [first.state, first.paymentModes, first.problem],
        ["active", ["one_time_purchase", "setup_only"], undefined]
      )
      const view = (yield* showConnector(service)).json
      const { expiresAt, recordedAt, ...evidence } = view.paymentCapabilities
      assert.deepStrictEqual(evidence, {
        revision: 0,
        modes: ["one_time_purchase", "setup_only"],
        livemode: false,
        connectedAccountReferenceHash: accountHash,
        providerConnectionGeneration: `test:${accountHash}`,
        responseFingerprint: yield* sha256Hex(peer.state.responses[0]!.body)
      })
      assert.strictEqual(parseTimestamp(expiresAt)! - parseTimestamp(recordedAt)!, capabilityValidityMillis)
      assert.strictEqual(recordedAt, view.lastCheck.at)
    })
  )

  it.scoped("the customer kit's proof: modes recorded, account hash = SHA-256 of the JSON account id", () =>
    Effect.gen(function* () {
      const service = yield* startService()
      const endpoint = yield* kitPeer(service.workspaceId, {
        payment: { modes: ["new_subscription", "recover_payment"], providerAccountId: "acct_1Kit", livemode: false }
      })
      yield* registerEndpoint(service, endpoint)
      const reply = (yield* runCheck(service)).json
      assert.deepStrictEqual([reply.state, reply.paymentModes], ["active", ["new_subscription", "recover_payment"]])
      const view = (yield* showConnector(service)).json.paymentCapabilities
      const expectedHash = yield* sha256Hex(new TextEncoder().encode(JSON.stringify("acct_1Kit")))
      assert.deepStrictEqual(
        [view.revision, view.connectedAccountReferenceHash, view.providerConnectionGeneration],
        [0, expectedHash, `test:${expectedHash}`]
      )
    })
  )

  it.scoped("a successful acknowledgement without proof removes the previous modes", () =>
    Effect.gen(function* () {
      const { first, peer, service } = yield* checkedWith(proof(0))
      assert.lengthOf(first.paymentModes, 2)
      peer.state.proof = undefined
      const reply = (yield* runCheck(service)).json
      assert.deepStrictEqual([reply.state, reply.paymentModes, reply.problem], ["active", [], undefined])
      assert.strictEqual((yield* showConnector(service)).json.paymentCapabilities, null)
    })
  )

  it.scoped("a generic acknowledgement enables no payment mode", () =>
    Effect.gen(function* () {
      const { first, service } = yield* checkedWith(undefined)
      assert.deepStrictEqual([first.state, first.paymentModes], ["active", []])
      assert.strictEqual((yield* showConnector(service)).json.paymentCapabilities, null)
    })
  )

  it.scoped("a proof for another revision enables nothing and clears the modes; the handshake still activates", () =>
    Effect.gen(function* () {
      const { first, peer, service } = yield* checkedWith(proof(0))
      assert.lengthOf(first.paymentModes, 2)
      yield* registerEndpoint(service, peer.url) // revision 1; the peer still proves revision 0
      const reply = (yield* runCheck(service)).json
      assert.deepStrictEqual(
        [reply.revision, reply.state, reply.paymentModes, reply.problem],
        [1, "active", [], "capability_revision_mismatch"]
      )
      const view = (yield* showConnector(service)).json
      assert.strictEqual(view.paymentCapabilities, null)
      assert.deepStrictEqual(
        [view.lastCheck.outcome, view.lastCheck.problem],
        ["succeeded", "capability_revision_mismatch"]
      )
    })
  )

  it.scoped("a proof naming another provider account is another generation and replaces the evidence", () =>
    Effect.gen(function* () {
      const { peer, service } = yield* checkedWith(proof(0))
      peer.state.proof = proof(0, {
        connectedAccountReferenceHash: "b".repeat(64),
        livemode: true,
        modes: ["new_subscription"]
      })
      assert.deepStrictEqual((yield* runCheck(service)).json.paymentModes, ["new_subscription"])
      const view = (yield* showConnector(service)).json.paymentCapabilities
      assert.deepStrictEqual([view.providerConnectionGeneration, view.livemode], [`live:${"b".repeat(64)}`, true])
    })
  )
})

// Time travel on the TestClock, at the core (the server's own background fibers would otherwise run
// through every virtual minute): the same check and the same evidence `GET /connector` shows.
onEachStorage("payment capability evidence over time", { live: false }, (it) => {
  /** Activated at `start` by a peer proving revision 0; `check` runs another check, `evidence` reads what counts now. */
  const provenAtStart = Effect.gen(function* () {
    yield* TestClock.setTime(start)
    const workspaceId = globalThis.crypto.randomUUID()
    const peer = yield* provingPeer(proof(0))
    const { connectionId } = yield* registerCore(workspaceId, peer.url)
    const first = yield* checkConnection(workspaceId)
    const evidence = Effect.gen(function* () {
      const connection = Option.getOrThrow(
        yield* Effect.flatMap(ConnectionStore, (store) => store.getById(connectionId))
      )
      return yield* currentCapabilities(connection, yield* Effect.clockWith((clock) => clock.currentTimeMillis))
    })
    return { peer, first, check: checkConnection(workspaceId), evidence }
  })

  it.scoped("evidence expires one hour after recording", () =>
    Effect.gen(function* () {
      const { evidence, first } = yield* provenAtStart
      assert.lengthOf(first.paymentModes, 2)
      yield* TestClock.adjust(minutes(59))
      assert.strictEqual(Option.getOrThrow(yield* evidence).expiresAt, start + capabilityValidityMillis)
      yield* TestClock.adjust(minutes(1))
      assert.isTrue(Option.isNone(yield* evidence))
    }).pipe(Effect.provide(outbound))
  )

  it.scoped("an exact replay of the proving response does not extend freshness; a fresh proof does", () =>
    Effect.gen(function* () {
      const { check, evidence, peer } = yield* provenAtStart

      // Within the nonce retention and after it: the same bytes and headers never count again.
      peer.state.replay = peer.state.responses[0]
      yield* TestClock.adjust(minutes(2))
      assert.strictEqual((yield* check).problem, "replayed_nonce")
      yield* TestClock.adjust(minutes(28))
      assert.strictEqual((yield* check).problem, "stale_response")
      assert.strictEqual(Option.getOrThrow(yield* evidence).expiresAt, start + capabilityValidityMillis)

      // A fresh, valid proof 30 minutes in is recorded anew and lasts an hour from then.
      peer.state.replay = undefined
      assert.lengthOf((yield* check).paymentModes, 2)
      assert.strictEqual(Option.getOrThrow(yield* evidence).expiresAt, start + 30 * 60_000 + capabilityValidityMillis)
      yield* TestClock.adjust(minutes(60))
      assert.isTrue(Option.isNone(yield* evidence))
    }).pipe(Effect.provide(outbound))
  )
})

// The race between activation and recording: a check of revision 0 read the connection (0 still
// active) and is about to record what it proved, when revision 1 is registered, activated and
// records its own evidence. Whatever 0's answer was, the newer evidence stays.
onEachStorage("payment capability evidence under concurrent checks", { live: true }, (it) => {
  /** The store, with the first `getById` of the fiber it is provided to held until `release`. */
  const pausedAfterFirstRead = (store: ConnectionStoreService) =>
    Effect.gen(function* () {
      const reached = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      let paused = false
      const gated: ConnectionStoreService = {
        ...store,
        getById: (connectionId) =>
          Effect.tap(store.getById(connectionId), () => {
            if (paused) return Effect.void
            paused = true
            return Effect.zipRight(Deferred.succeed(reached, undefined), Deferred.await(release))
          })
      }
      return { gated, reached: Deferred.await(reached), release: Deferred.succeed(release, undefined) }
    })

  for (const slowAnswer of ["proves revision 0 again", "carries no proof"] as const) {
    it.scoped(
      `a slow check of the replaced revision whose answer ${slowAnswer} leaves the active revision's evidence unchanged`,
      () =>
        Effect.gen(function* () {
          const workspaceId = globalThis.crypto.randomUUID()
          const peer = yield* provingPeer(proof(0))
          const { connectionId } = yield* registerCore(workspaceId, peer.url)
          assert.lengthOf((yield* checkConnection(workspaceId)).paymentModes, 2) // 0 active, proven
          if (slowAnswer === "carries no proof") peer.state.proof = undefined

          const store = yield* ConnectionStore
          const pause = yield* pausedAfterFirstRead(store)
          const slow = yield* Effect.fork(
            checkConnection(workspaceId).pipe(Effect.provideService(ConnectionStore, pause.gated))
          )
          yield* pause.reached // 0's answer is verified and 0 was read as active

          peer.state.proof = proof(1, { modes: ["new_subscription"] })
          yield* registerCore(workspaceId, peer.url)
          const newer = yield* checkConnection(workspaceId)
          assert.deepStrictEqual([newer.revision, newer.state, newer.paymentModes], [1, "active", ["new_subscription"]])
          const registry = yield* CapabilityRegistry
          const now = () => Date.now()
          const recorded = yield* registry.current(connectionId, now())
          assert.strictEqual(Option.getOrThrow(recorded).revision, 1)

          yield* pause.release
          const late = yield* Fiber.join(slow)
          assert.deepStrictEqual([late.revision, late.state, late.paymentModes], [0, "replaced", ["new_subscription"]])
          if (slowAnswer === "proves revision 0 again") assert.strictEqual(late.problem, "revision_superseded")
          assert.deepStrictEqual(yield* registry.current(connectionId, now()), recorded)
          const connection = Option.getOrThrow(yield* store.getById(connectionId))
          assert.deepStrictEqual(yield* currentCapabilities(connection, now()), recorded)
        }).pipe(Effect.provide(outbound))
    )
  }
})
