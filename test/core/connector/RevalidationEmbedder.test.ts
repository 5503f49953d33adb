/**
 * An embedding host's own revalidation (an embedding host may supply its own layer), on memory,
 * PGlite and PostgreSQL:
 *
 * - `Revalidation.layerWith(extra)`: the stored-catalog checks, then the host's; the host refusing
 *   an account refuses it at intake and blocks its action before delivery;
 * - a host layer merged after the storage layer replaces the stored-catalog one altogether.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as NodeCrypto from "../../../adapters/crypto/NodeCrypto.ts"
import { makeDispatcher } from "../../../core/connector/Dispatcher.ts"
import { intake } from "../../../core/connector/Intake.ts"
import * as Revalidation from "../../../core/connector/Revalidation.ts"
import { ActionLedger } from "../../../core/ports/ActionLedger.ts"
import { ConnectionStore } from "../../../core/ports/ConnectionStore.ts"
import { ConnectorTransport, TransportFailure } from "../../../core/ports/ConnectorTransport.ts"
import { connectorSecretRef, SecretVault } from "../../../core/ports/SecretVault.ts"
import { publishCatalog } from "../../support/catalog.ts"
import { fixtureCatalog, intakeInput } from "../../support/deliveries.ts"
import { storageVariants, uid } from "../../support/storage.ts"
import { connect, secrets } from "./dispatch/support.ts"

/** The customer side: records the action of every request it is sent, and answers none. */
const peer = { sent: [] as Array<string> }
const sentFor = (actionRequestId: string) => peer.sent.filter((id) => id === actionRequestId).length
const transport = Layer.succeed(ConnectorTransport, {
  post: (outgoing) =>
    Effect.suspend(() => {
      peer.sent.push(
        (JSON.parse(new TextDecoder().decode(outgoing.body)) as { readonly actionRequestId: string }).actionRequestId
      )
      return Effect.fail(new TransportFailure({ reason: "connect", maybeDelivered: false }))
    })
})

/** The host's own standing rules, a service of its own the extra check needs (`layerWith`'s `R`). */
class HostStanding extends Context.Tag("test/HostStanding")<HostStanding, { readonly suspended: Set<string> }>() {}

const hostCheck = (subject: Revalidation.RevalidationSubject) =>
  Effect.flatMap(HostStanding, ({ suspended }) =>
    suspended.has(subject.request.accountId)
      ? Effect.fail(
          new Revalidation.RevalidationFailed({
            reason: "account_state_not_eligible",
            path: "accountId",
            detail: "the host suspended this account"
          })
        )
      : Effect.void
  )

const freshWorkspace = Effect.suspend(() => {
  const as = { workspaceId: uid(), connectionId: uid(), secrets }
  return Effect.as(connect("http://127.0.0.1:1/connector", as), as.workspaceId)
})

/** A workspace with an active connection and no catalog at all. */
const workspaceWithoutCatalog = Effect.gen(function* () {
  const workspaceId = uid()
  const connectionId = uid()
  const store = yield* ConnectionStore
  const vault = yield* SecretVault
  const now = Date.now()
  const { revision } = yield* store.registerRevision({
    workspaceId,
    connectionId,
    endpoint: "http://127.0.0.1:1/connector",
    now
  })
  yield* vault.put(connectorSecretRef(connectionId, revision, "actionSigning"), secrets.actionSigning, now)
  yield* vault.put(connectorSecretRef(connectionId, revision, "completion"), secrets.completion, now)
  yield* store.activate({ connectionId, revision, now })
  return workspaceId
})

const runDispatcherOnce = Effect.flatMap(makeDispatcher({ owner: uid() }), (dispatcher) => dispatcher.runOnce)
const stateOf = (id: string) =>
  Effect.map(
    Effect.flatMap(ActionLedger, (l) => l.get(id)),
    (r) => Option.getOrThrow(r).state
  )
const reasonOf = (result: Either.Either<unknown, unknown>) =>
  (result as Either.Left<{ readonly reason?: string; readonly _tag: string }, unknown>).left.reason

for (const variant of storageVariants) {
  describe.skipIf(!variant.available)(`an embedder's revalidation (${variant.name})`, () => {
    it.live(
      "layerWith(extra): the host refusing an account refuses its intake and blocks its action before delivery",
      () => {
        const suspended = new Set<string>()
        const storage = variant.layer()
        // The host merges its layer after the storage layer (which carries the stored-catalog one).
        const host = Layer.merge(
          storage,
          Revalidation.layerWith(hostCheck).pipe(
            Layer.provide(storage),
            Layer.provide(Layer.succeed(HostStanding, { suspended }))
          )
        )
        return Effect.gen(function* () {
          const workspaceId = yield* freshWorkspace
          // Refused at intake, naming the field; another account is taken.
          const refusedAccount = uid("acct_")
          suspended.add(refusedAccount)
          const refused = yield* Effect.either(intake(workspaceId, intakeInput(refusedAccount)))
          assert.strictEqual(reasonOf(refused), "account_state_not_eligible")
          // Taken while in good standing, suspended before delivery: blocked, nothing sent.
          const accountId = uid("acct_")
          const { actionRequestId } = yield* intake(workspaceId, intakeInput(accountId))
          suspended.add(accountId)
          yield* runDispatcherOnce
          assert.strictEqual(sentFor(actionRequestId), 0)
          assert.strictEqual(yield* stateOf(actionRequestId), "blocked")
          const last = (yield* (yield* ActionLedger).history(actionRequestId)).at(-1)!
          assert.deepStrictEqual(last.detail, { attempt: 1, reason: "account_state_not_eligible" })
          // A third, never suspended, is sent.
          const sent = yield* intake(workspaceId, intakeInput(uid("acct_")))
          yield* runDispatcherOnce
          assert.strictEqual(sentFor(sent.actionRequestId), 1)
        }).pipe(Effect.provide(Layer.mergeAll(host, NodeCrypto.layer, transport)))
      },
      60_000
    )

    it.live(
      "layerWith(extra) keeps the stored-catalog checks first: a republished catalog still blocks",
      () => {
        const storage = variant.layer()
        const host = Layer.merge(
          storage,
          Revalidation.layerWith(hostCheck).pipe(
            Layer.provide(storage),
            Layer.provide(Layer.succeed(HostStanding, { suspended: new Set<string>() }))
          )
        )
        return Effect.gen(function* () {
          const workspaceId = yield* freshWorkspace
          const refused = yield* Effect.either(
            intake(workspaceId, {
              ...intakeInput(uid("acct_")),
              binding: { ...intakeInput().binding, publishedVersionId: uid() }
            })
          )
          assert.strictEqual(reasonOf(refused), "published_version_unknown")
          const { actionRequestId } = yield* intake(workspaceId, intakeInput(uid("acct_")))
          yield* publishCatalog(workspaceId, { ...fixtureCatalog, publishedVersionId: uid() })
          yield* runDispatcherOnce
          assert.strictEqual(sentFor(actionRequestId), 0)
          assert.strictEqual(yield* stateOf(actionRequestId), "blocked")
        }).pipe(Effect.provide(Layer.mergeAll(host, NodeCrypto.layer, transport)))
      },
      60_000
    )

    it.live(
      "a host layer merged after the storage layer replaces the stored-catalog one",
      () => {
        const asked: Array<string> = []
        const refuse = new Set<string>()
        const storage = variant.layer()
        // The host keeps its catalog elsewhere: its check is the only one.
        const own = Layer.succeed(
          Revalidation.Revalidation,
          Revalidation.Revalidation.of({
            check: (subject) =>
              Effect.suspend(() => {
                asked.push(subject.request.accountId)
                return refuse.has(subject.request.accountId)
                  ? Effect.fail(
                      new Revalidation.RevalidationFailed({
                        reason: "offer_unknown",
                        path: "binding.offerId",
                        detail: "not in the host's catalog"
                      })
                    )
                  : Effect.void
              })
          })
        )
        return Effect.gen(function* () {
          // No catalog published: the stored-catalog revalidation would answer catalog_not_published.
          const workspaceId = yield* workspaceWithoutCatalog
          const accountId = uid("acct_")
          const { actionRequestId } = yield* intake(workspaceId, intakeInput(accountId))
          yield* runDispatcherOnce
          assert.strictEqual(sentFor(actionRequestId), 1)
          // Intake and the delivery both asked the host.
          assert.deepStrictEqual(asked, [accountId, accountId])
          // And what the host refuses is blocked before delivery.
          const other = uid("acct_")
          const taken = yield* intake(workspaceId, intakeInput(other))
          refuse.add(other)
          yield* runDispatcherOnce
          assert.strictEqual(sentFor(taken.actionRequestId), 0)
          assert.strictEqual(yield* stateOf(taken.actionRequestId), "blocked")
        }).pipe(Effect.provide(Layer.mergeAll(Layer.merge(storage, own), NodeCrypto.layer, transport)))
      },
      60_000
    )
  })
}
