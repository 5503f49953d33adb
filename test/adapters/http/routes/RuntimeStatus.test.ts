/**
 * The runtime status route as a polling runtime meets it, over real HTTP on loopback: the real
 * server composition (`bootService`, memory storage) and the customer kit on its own port, whose
 * executor holds each action until the test lets it go, so the action waits `accepted` for as long
 * as a test needs. One server and kit for the file.
 *
 * What is pinned: a strong `ETag`, `Cache-Control: no-store` and a `Retry-After` hint on every
 * answer while the action is not final; `If-None-Match` naming the current tag → 304 without a
 * body; a final action without the hint and with a new tag; a long poll (`Prefer: wait=N`) woken by
 * the action's change, and one that ends its wait with 304.
 */
import { assert, describe, layer } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type { ClaimedExecution } from "../../../../core/customer/ClaimedExecution.ts"
import { secrets } from "../../../core/connector/dispatch/support.ts"
import {
  approveBody,
  ownerSession,
  prepareApproval,
  requestApproval,
  resolveApproval,
  viewerSession
} from "../../../e2e/approvals.ts"
import { bootService, connect, serveKit, type Service, waitFor } from "../../../e2e/support.ts"
import { type Reply, request } from "../../../support/http.ts"
import { storageVariants } from "../../../support/storage.ts"

const memory = storageVariants.find((v) => v.name === "memory")!
const runtime = "/api/funnels/v1/runtime/actions"

interface Env {
  readonly service: Service
  /** Lets the kit finish executing the action (its completion then verifies it). */
  readonly release: (actionRequestId: string) => void
}

class TestEnv extends Context.Tag("test/RuntimeStatus/Env")<TestEnv, Env>() {}

const gates = new Map<string, { readonly promise: Promise<void>; readonly open: () => void }>()
const gate = (id: string) => {
  const found = gates.get(id)
  if (found !== undefined) return found
  let open = () => {}
  const promise = new Promise<void>((resolve) => {
    open = resolve
  })
  const made = { promise, open }
  gates.set(id, made)
  return made
}

const envLayer = Layer.scoped(
  TestEnv,
  Effect.gen(function* () {
    const service = yield* bootService({ storage: memory })
    const kit = yield* serveKit(memory, service.base, {
      executor: {
        execute: async (claimed: ClaimedExecution) => {
          await gate(claimed.actionRequestId).promise
          return {
            outcome: "succeeded",
            providerReference: `trial_ext_${claimed.actionRequestId.slice(0, 8)}`,
            evidence: { entitlement: "trial_extended", reasonCode: "extended", source: "authenticated_completion" }
          }
        },
        lookup: async () => undefined
      }
    })
    yield* connect(service, kit.url, secrets)
    yield* Effect.addFinalizer(() => Effect.sync(() => gates.forEach((g) => g.open())))
    return { service, release: (id: string) => gate(id).open() }
  })
)

const status = (service: Service, id: string, token: string, headers: Record<string, string> = {}) =>
  request(`${service.base}${runtime}/status/${id}`, { headers: { authorization: `Bearer ${token}`, ...headers } })

/** An approved action of the owner's session, acknowledged by the kit and held there: `accepted`. */
const acceptedAction = Effect.gen(function* () {
  const { service } = yield* TestEnv
  const viewer = yield* viewerSession(service)
  const owner = yield* ownerSession(service)
  const approval = yield* requestApproval(service, viewer.token)
  const prepared = yield* prepareApproval(service, approval, owner.token)
  assert.strictEqual(prepared.status, 200, prepared.text)
  const resolved = yield* resolveApproval(service, approveBody(approval, owner.token, prepared))
  assert.strictEqual(resolved.status, 200, resolved.text)
  const id = resolved.json.actionRequestId as string
  const accepted = yield* waitFor(
    status(service, id, owner.token),
    (reply) => reply.json?.state === "accepted",
    `${id} to be accepted`
  )
  return { id, token: owner.token, accepted }
})

const assertPollable = (reply: Reply) => {
  assert.match(reply.headers.get("etag") ?? "", /^"[0-9]+c?"$/, "a strong entity tag")
  assert.strictEqual(reply.headers.get("cache-control"), "no-store")
  assert.match(reply.headers.get("retry-after") ?? "", /^[1-9][0-9]*$/, "whole seconds until the next read")
}

describe("the runtime status route, polled", () => {
  layer(envLayer, { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect("while not final: 200 with a strong ETag, no-store and Retry-After", () =>
      Effect.gen(function* () {
        const { accepted } = yield* acceptedAction
        assert.strictEqual(accepted.status, 200, accepted.text)
        assert.strictEqual(accepted.json.state, "accepted")
        assertPollable(accepted)
      })
    )

    it.effect("If-None-Match naming the current ETag: 304 without a body, with the same ETag and hint", () =>
      Effect.gen(function* () {
        const { service } = yield* TestEnv
        const { accepted, id, token } = yield* acceptedAction
        const etag = accepted.headers.get("etag")!
        const again = yield* status(service, id, token, { "if-none-match": etag })
        assert.strictEqual(again.status, 304)
        assert.strictEqual(again.text, "")
        assert.strictEqual(again.headers.get("etag"), etag)
        assertPollable(again)
        // A weak form of the same tag, in a list, matches too (RFC 9110: weak comparison).
        const listed = yield* status(service, id, token, { "if-none-match": `"0", W/${etag}` })
        assert.strictEqual(listed.status, 304)
      })
    )

    it.effect("an ETag that is no longer current: 200 with the status", () =>
      Effect.gen(function* () {
        const { service } = yield* TestEnv
        const { id, token } = yield* acceptedAction
        const stale = yield* status(service, id, token, { "if-none-match": `"0"` })
        assert.strictEqual(stale.status, 200, stale.text)
        assert.strictEqual(stale.json.state, "accepted")
      })
    )

    it.effect("once final: a new ETag and no Retry-After; the old ETag gets the final status", () =>
      Effect.gen(function* () {
        const { release, service } = yield* TestEnv
        const { accepted, id, token } = yield* acceptedAction
        release(id)
        const final = yield* waitFor(
          status(service, id, token),
          (reply) => reply.json?.state === "verified",
          `${id} to be verified`
        )
        assert.isNull(final.headers.get("retry-after"), "nothing more to wait for")
        assert.strictEqual(final.headers.get("cache-control"), "no-store")
        assert.notStrictEqual(final.headers.get("etag"), accepted.headers.get("etag"))
        const fromOld = yield* status(service, id, token, { "if-none-match": accepted.headers.get("etag")! })
        assert.strictEqual(fromOld.status, 200)
        assert.deepStrictEqual(fromOld.json, { actionRequestId: id, state: "verified", mayAdvance: true })
      })
    )

    it.effect("a long poll (Prefer: wait) is answered when the action changes, with the new status", () =>
      Effect.gen(function* () {
        const { release, service } = yield* TestEnv
        const { accepted, id, token } = yield* acceptedAction
        const etag = accepted.headers.get("etag")!
        const waiting = yield* Effect.fork(status(service, id, token, { "if-none-match": etag, prefer: "wait=25" }))
        // Not answered while nothing changes (its wait is 25 s; the action is held by the kit).
        yield* Effect.sleep("300 millis")
        assert.isTrue(Option.isNone(yield* Fiber.poll(waiting)), "not answered before the change")
        release(id)
        const woken = yield* Fiber.join(waiting)
        assert.strictEqual(woken.status, 200, woken.text)
        assert.notStrictEqual(woken.json.state, "accepted")
        assert.notStrictEqual(woken.headers.get("etag"), etag)
      })
    )

    it.effect("a long poll whose action does not change ends its wait with 304", () =>
      Effect.gen(function* () {
        const { service } = yield* TestEnv
        const { accepted, id, token } = yield* acceptedAction
        const etag = accepted.headers.get("etag")!
        const waited = yield* status(service, id, token, { "if-none-match": etag, prefer: "wait=1" })
        assert.strictEqual(waited.status, 304)
        assert.strictEqual(waited.headers.get("etag"), etag)
        assertPollable(waited)
      })
    )
  })
})
