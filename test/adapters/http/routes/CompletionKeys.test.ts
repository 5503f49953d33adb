/**
 * The completion route opens a revision's completion secret once, over real HTTP on loopback: the
 * server in this process on memory storage whose secret vault counts its reads, a connection
 * activated against a peer, and completions for several accepted actions. The first completion
 * reads the secret; the others verify with the key it imported. A retired revision's key is never
 * tried again however it was kept: `test/core/connector/dispatch/CompletionIntake.test.ts`.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { SecretVault } from "../../../../core/ports/SecretVault.ts"
import { formatTimestamp } from "../../../../core/protocol/Timestamp.ts"
import { secrets, signedCompletion, startPeer } from "../../../core/connector/dispatch/support.ts"
import { acceptedAction, bootService, connect } from "../../../e2e/support.ts"
import { request } from "../../../support/http.ts"
import { type StorageVariant, storageVariants } from "../../../support/storage.ts"

/** Memory storage whose vault counts reads of connector completion secrets. */
const counting = () => {
  const reads = { completion: 0 }
  const memory = storageVariants.find((variant) => variant.name === "memory")!
  const variant: StorageVariant = {
    ...memory,
    layer: () =>
      Layer.effect(
        SecretVault,
        Effect.map(SecretVault, (vault) => ({
          ...vault,
          get: (ref: string) => {
            if (ref.startsWith("connector:") && ref.endsWith(":completion")) reads.completion++
            return vault.get(ref)
          }
        }))
      ).pipe(Layer.provideMerge(memory.layer()))
  }
  return { reads, variant }
}

describe("completion route", () => {
  it.live("opens a revision's completion secret on its first completion only", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const { reads, variant } = counting()
        const peer = yield* Effect.acquireRelease(
          Effect.promise(() => startPeer()),
          (peer) => Effect.promise(() => peer.close())
        )
        const service = yield* bootService({ storage: variant })
        yield* connect(service, peer.url, secrets)
        const workspaceId = service.ws.split("/").at(-1)
        const actions = [
          yield* acceptedAction(service, "acct_keys_1"),
          yield* acceptedAction(service, "acct_keys_2"),
          yield* acceptedAction(service, "acct_keys_3")
        ]
        const before = reads.completion
        for (const action of actions) {
          const signed = yield* signedCompletion({
            type: "service.customer_action.completion",
            protocolVersion: 1,
            workspaceId,
            actionRequestId: action.id,
            providerIdempotencyKey: action.providerIdempotencyKey,
            providerReference: "ref_keys",
            completionId: `cmp_${action.id}`,
            completedAt: formatTimestamp(Date.now()),
            outcome: "succeeded",
            evidence: { entitlement: "trial_extended", reasonCode: "extended", source: "authenticated_completion" }
          })
          const reply = yield* request(`${service.base}/api/funnels/v1/runtime/actions/customer-complete`, {
            method: "POST",
            ...signed
          })
          assert.strictEqual(reply.status, 200, reply.text)
          assert.strictEqual(reply.json.status, "recorded")
        }
        assert.strictEqual(reads.completion - before, 1)
      })
    )
  )
})
