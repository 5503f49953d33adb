/**
 * `POST /connector/check` over real HTTP on loopback against real storage: the customer kit as the
 * peer for the happy path, and peers that answer wrongly on purpose, one per rejection reason. A
 * failed check leaves the revision as it was; a handshake for a revision superseded while it ran
 * activates nothing and overwrites nothing.
 */
import { assert } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import { ConnectionStore } from "../../../../core/ports/ConnectionStore.ts"
import { headerNames } from "../../../../core/protocol/Signing.ts"
import { warnIfSkipped } from "../../../support/postgres.ts"
import {
  ackPeer,
  fixedPeer,
  kitPeer,
  onEachStorage,
  type PeerResponse,
  registerEndpoint,
  runCheck,
  type SeenHandshake,
  type Service,
  showConnector,
  startService
} from "./support.ts"

warnIfSkipped("connection check")

/** The revisions' states, newest first. */
const states = (view: { revisions: ReadonlyArray<{ revision: number; state: string }> }) =>
  view.revisions.map((r) => [r.revision, r.state])

onEachStorage("POST /connector/check", { live: true }, (it) => {
  it.scoped("against the customer kit: the pending revision 0 becomes active, with no payment modes", () =>
    Effect.gen(function* () {
      const service = yield* startService()
      const endpoint = yield* kitPeer(service.workspaceId)
      const { connectionId } = yield* registerEndpoint(service, endpoint)
      const reply = yield* runCheck(service)
      assert.strictEqual(reply.status, 200)
      assert.deepStrictEqual(reply.json, { connectionId, revision: 0, state: "active", paymentModes: [] })
      const view = (yield* showConnector(service)).json
      assert.strictEqual(view.activeRevision, 0)
      assert.strictEqual(view.pendingRevision, null)
      assert.deepStrictEqual(states(view), [[0, "active"]])
      assert.deepStrictEqual(
        { ...view.lastCheck, at: undefined },
        { revision: 0, at: undefined, outcome: "succeeded", problem: null }
      )
      assert.strictEqual(view.paymentCapabilities, null)
      const trail = yield* Effect.flatMap(ConnectionStore, (store) => store.audit(connectionId))
      assert.deepStrictEqual(
        trail.map((e) => e.event),
        ["registered", "activated"]
      )
      // Checking again re-checks the active revision.
      const again = yield* runCheck(service)
      assert.deepStrictEqual(again.json, { connectionId, revision: 0, state: "active", paymentModes: [] })
    })
  )

  it.scoped("the customer kit refuses a handshake for another revision than its own: the check fails", () =>
    Effect.gen(function* () {
      const service = yield* startService()
      const endpoint = yield* kitPeer(service.workspaceId) // configured for revision 0
      yield* registerEndpoint(service, endpoint)
      yield* registerEndpoint(service, endpoint) // revision 1: the kit still holds revision 0's configuration
      const reply = (yield* runCheck(service)).json
      assert.deepStrictEqual([reply.revision, reply.state, reply.problem], [1, "pending", "unexpected_status"])
    })
  )

  it.scoped("the handshake is signed for the revision, carries its number and a challenge equal to the nonce", () =>
    Effect.gen(function* () {
      const service = yield* startService()
      const seen: Array<SeenHandshake> = []
      const endpoint = yield* ackPeer({ onExchange: (s) => void seen.push(s) })
      const first = yield* registerEndpoint(service, endpoint)
      yield* registerEndpoint(service, endpoint) // revision 1, pending
      assert.strictEqual((yield* runCheck(service)).json.state, "active")
      assert.strictEqual(seen.length, 1) // the peer verified the signature; otherwise it answers 401
      const { headers, request } = seen[0]!
      assert.strictEqual(headers[headerNames.connectionRevision], "1")
      assert.strictEqual(headers[headerNames.version], "1")
      assert.strictEqual(headers["content-type"], "application/json")
      assert.strictEqual(request.challenge, headers[headerNames.nonce])
      assert.isAtLeast(request.challenge.length, 32)
      assert.deepStrictEqual(
        { ...request, challenge: undefined, sentAt: undefined },
        {
          challenge: undefined,
          connectionId: first.connectionId,
          protocolVersion: 1,
          sentAt: undefined,
          type: "service.customer_action.handshake",
          workspaceId: service.workspaceId
        }
      )
    })
  )

  const rejections: ReadonlyArray<readonly [string, string, (service: Service) => Effect.Effect<string, never, any>]> =
    [
      ["a response signed with another secret", "invalid_signature", () => ackPeer({ signingSecret: "x".repeat(40) })],
      [
        "a response timestamped more than 5 minutes ago",
        "stale_response",
        () => ackPeer({ timestampShiftMillis: -301_000 })
      ],
      [
        "a response timestamped more than 5 minutes ahead",
        "future_response",
        () => ackPeer({ timestampShiftMillis: 301_000 })
      ],
      [
        "an unsigned response",
        "unsupported_version",
        () => fixedPeer(200, { "content-type": "application/json" }, "{}")
      ],
      [
        "an acknowledgement with an extra field",
        "invalid_ack",
        () => ackPeer({ ack: (ack) => ({ ...ack, extra: true }) })
      ],
      ["an acknowledgement without status", "invalid_ack", () => ackPeer({ ack: ({ status: _, ...ack }) => ack })],
      ["a signed body that is not JSON", "malformed_response", () => ackPeer({ rawBody: "not json" })],
      [
        "another challenge",
        "challenge_mismatch",
        () => ackPeer({ ack: (ack) => ({ ...ack, challenge: "c".repeat(32) }) })
      ],
      [
        "another connection",
        "connection_mismatch",
        () => ackPeer({ ack: (ack) => ({ ...ack, connectionId: "00000000-0000-4000-8000-000000000000" }) })
      ],
      [
        "another workspace",
        "workspace_mismatch",
        () => ackPeer({ ack: (ack) => ({ ...ack, workspaceId: "00000000-0000-4000-8000-000000000000" }) })
      ],
      ["a 302 redirect", "redirect", () => fixedPeer(302, { location: "http://127.0.0.1:9/elsewhere" })],
      ["a 500", "unexpected_status", () => fixedPeer(500)],
      ["a correct acknowledgement with status 202", "unexpected_status", () => ackPeer({ status: 202 })],
      ["a response slower than the time-out", "timeout", () => ackPeer({ delay: Effect.sleep("3 seconds") })],
      ["a closed port", "connect_failed", () => Effect.succeed("http://127.0.0.1:9/accord/hook")]
    ]
  for (const [what, problem, peer] of rejections) {
    it.scoped(`${what}: the check fails with ${problem}, the revision stays pending`, () =>
      Effect.gen(function* () {
        const service = yield* startService({ handshakeTimeoutMillis: 1_000 })
        const { connectionId } = yield* registerEndpoint(service, yield* peer(service))
        const reply = yield* runCheck(service)
        assert.strictEqual(reply.status, 200)
        assert.deepStrictEqual(reply.json, { connectionId, revision: 0, state: "pending", paymentModes: [], problem })
        const view = (yield* showConnector(service)).json
        assert.deepStrictEqual(states(view), [[0, "pending"]])
        assert.strictEqual(view.activeRevision, null)
        assert.deepStrictEqual(
          [view.lastCheck.revision, view.lastCheck.outcome, view.lastCheck.problem],
          [0, "failed", problem]
        )
      })
    )
  }

  it.scoped("a replayed response (same bytes and headers) fails with replayed_nonce", () =>
    Effect.gen(function* () {
      const service = yield* startService()
      let recorded: PeerResponse | undefined
      const endpoint = yield* ackPeer({
        replay: () => recorded,
        onExchange: (_, response) => {
          recorded ??= response
        }
      })
      yield* registerEndpoint(service, endpoint)
      assert.strictEqual((yield* runCheck(service)).json.state, "active")
      const replayed = (yield* runCheck(service)).json
      assert.deepStrictEqual([replayed.state, replayed.problem], ["active", "replayed_nonce"])
      const view = (yield* showConnector(service)).json
      assert.deepStrictEqual([view.lastCheck.outcome, view.lastCheck.problem], ["failed", "replayed_nonce"])
      assert.strictEqual(view.activeRevision, 0) // a failed re-check does not deactivate
    })
  )

  it.scoped("a failed check of a pending revision leaves the active one active", () =>
    Effect.gen(function* () {
      const service = yield* startService()
      yield* registerEndpoint(service, yield* ackPeer())
      assert.strictEqual((yield* runCheck(service)).json.state, "active")
      yield* registerEndpoint(service, yield* fixedPeer(500))
      const reply = (yield* runCheck(service)).json
      assert.deepStrictEqual([reply.revision, reply.state, reply.problem], [1, "pending", "unexpected_status"])
      const view = (yield* showConnector(service)).json
      assert.deepStrictEqual(states(view), [
        [1, "pending"],
        [0, "active"]
      ])
    })
  )

  it.scoped(
    "a handshake for a revision superseded while it ran activates nothing and overwrites nothing, capability evidence included",
    () =>
      Effect.gen(function* () {
        const service = yield* startService()
        const proof = (connectionRevision: number, modes: ReadonlyArray<string>) => (ack: Record<string, unknown>) => ({
          ...ack,
          paymentCapabilities: {
            connectedAccountReferenceHash: "a".repeat(64),
            connectionRevision,
            livemode: false,
            modes
          }
        })
        yield* registerEndpoint(service, yield* ackPeer({ ack: proof(0, ["one_time_purchase"]) }))
        const activated = (yield* runCheck(service)).json // revision 0 active, its proof recorded
        assert.deepStrictEqual([activated.state, activated.paymentModes], ["active", ["one_time_purchase"]])
        const arrived = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        const slow = yield* ackPeer({
          ack: proof(1, ["new_subscription", "setup_only"]),
          delay: Effect.zipRight(Deferred.succeed(arrived, undefined), Deferred.await(release))
        })
        yield* registerEndpoint(service, slow) // revision 1
        const before = (yield* showConnector(service)).json
        const check = yield* Effect.fork(runCheck(service))
        yield* Deferred.await(arrived) // the peer holds revision 1's (valid) answer, with a valid proof...
        yield* registerEndpoint(service, slow) // ...while revision 2 is registered
        yield* Deferred.succeed(release, undefined)
        const reply = (yield* Fiber.join(check)).json
        assert.deepStrictEqual(
          [reply.revision, reply.state, reply.problem, reply.paymentModes],
          [1, "superseded", "revision_superseded", ["one_time_purchase"]]
        )
        const view = (yield* showConnector(service)).json
        assert.deepStrictEqual(states(view), [
          [2, "pending"],
          [1, "superseded"],
          [0, "active"]
        ])
        assert.deepStrictEqual(view.lastCheck, before.lastCheck) // not overwritten by the superseded revision's check
        // The active revision's evidence is exactly as before: same revision, modes, fingerprint and times.
        assert.strictEqual(view.paymentCapabilities.revision, 0)
        assert.deepStrictEqual(view.paymentCapabilities, before.paymentCapabilities)
        const trail = yield* Effect.flatMap(ConnectionStore, (store) => store.audit(view.connectionId))
        assert.deepStrictEqual(
          trail.map((e) => [e.revision, e.event]),
          [
            [0, "registered"],
            [0, "activated"],
            [1, "registered"],
            [2, "registered"]
          ]
        )
      })
  )
})
