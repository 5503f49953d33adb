/**
 * `Erasure.erase` on the memory stores: the subject joins the process's suppression set before
 * anything is removed, a refused erasure (actions in flight) removes nothing and leaves the set as
 * it was, and the pseudonym is the SHA-256 of the id's JSON string.
 */
import { createHash } from "node:crypto"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as NodeCrypto from "../../../adapters/crypto/NodeCrypto.ts"
import * as MemoryStorage from "../../../adapters/memory/Storage.ts"
import * as Suppression from "../../../core/ingest/Suppression.ts"
import { ActionLedger } from "../../../core/ports/ActionLedger.ts"
import { EventStore } from "../../../core/ports/EventStore.ts"
import { SuppressionStore } from "../../../core/ports/SuppressionStore.ts"
import { erase, OpenActions, pseudonym } from "../../../core/privacy/Erasure.ts"
import { cipherLayer } from "../../support/storage.ts"

const services = Suppression.layer.pipe(
  Layer.provideMerge(MemoryStorage.layer),
  Layer.provideMerge(NodeCrypto.layer),
  Layer.provide(cipherLayer)
)

const workspaceId = "ws-erasure"

const stored = (accountId: string, eventId: string) => ({
  id: `row-${eventId}`,
  workspaceId,
  eventId,
  accountId,
  eventName: "feature_used",
  occurredAt: 1_700_000_000_000,
  receivedAt: 1_700_000_000_001,
  payloadHash: "a".repeat(64),
  body: { event_name: "feature_used", account_id: accountId, event_id: eventId }
})

describe("Erasure", () => {
  it.effect("an erased account is suppressed in this process and its events are gone", () =>
    Effect.gen(function* () {
      yield* (yield* EventStore).append([stored("acct_gone", "e1"), stored("acct_kept", "e2")])
      const suppression = yield* erase({ workspaceId, subject: { kind: "account", id: "acct_gone" }, by: "api_key:k" })
      assert.strictEqual(suppression.removed.events, 1)
      assert.strictEqual(suppression.createdBy, "api_key:k")
      const set = yield* Suppression.Suppressions
      assert.isTrue(set.isSuppressed(workspaceId, "acct_gone", undefined))
      assert.isFalse(set.isSuppressed(workspaceId, "acct_kept", undefined))
      assert.isFalse(set.isSuppressed("ws-other", "acct_gone", undefined))
      assert.isTrue(
        Option.isSome(yield* (yield* SuppressionStore).get(workspaceId, { kind: "account", id: "acct_gone" }))
      )
    }).pipe(Effect.provide(services))
  )

  it.effect("an account with an action in flight is refused: nothing removed, nothing suppressed", () =>
    Effect.gen(function* () {
      yield* (yield* EventStore).append([stored("acct_busy", "e3")])
      yield* (yield* ActionLedger).create({
        record: {
          actionRequestId: "ar-busy",
          workspaceId,
          accountId: "acct_busy",
          connectionId: "conn",
          revision: 1,
          providerIdempotencyKey: "idem-busy",
          state: "unknown_outcome",
          request: { accountId: "acct_busy" },
          acknowledgement: null,
          sealedContinuation: null,
          createdAt: 1_700_000_000_000
        },
        history: { at: 1_700_000_000_000, trigger: "intake", detail: {} }
      })
      const refused = yield* Effect.flip(
        erase({ workspaceId, subject: { kind: "account", id: "acct_busy" }, by: "api_key:k" })
      )
      assert.deepStrictEqual(refused, new OpenActions({ count: 1 }))
      assert.isFalse((yield* Suppression.Suppressions).isSuppressed(workspaceId, "acct_busy", undefined))
      assert.strictEqual((yield* (yield* EventStore).listAll({ workspaceId, accountId: "acct_busy" })).length, 1)
      assert.isTrue(
        Option.isNone(yield* (yield* SuppressionStore).get(workspaceId, { kind: "account", id: "acct_busy" }))
      )
    }).pipe(Effect.provide(services))
  )

  it.effect("the pseudonym is erased: and the SHA-256 hex of the JSON string of the id", () =>
    Effect.gen(function* () {
      // the digest connectedAccountReferenceHash takes of an account id: quotes included
      const expected = createHash("sha256").update('"acct_42"').digest("hex")
      assert.strictEqual(yield* pseudonym({ kind: "account", id: "acct_42" }), `erased:${expected}`)
    }).pipe(Effect.provide(NodeCrypto.layer))
  )
})
