/**
 * The completion intake (docs/decisions.md, "Completion route authentication"): one test per
 * rejection reason, redelivery, conflict, and the state changes completions drive. Completions are
 * signed here as the customer kit signs them.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as NodeCrypto from "../../../../adapters/crypto/NodeCrypto.ts"
import { ActionLedger } from "../../../../core/ports/ActionLedger.ts"
import { ConnectionStore } from "../../../../core/ports/ConnectionStore.ts"
import type { Crypto } from "../../../../core/ports/Crypto.ts"
import { makeCompletionReceiver } from "../../../../core/connector/CompletionIntake.ts"
import type { ActionIntake } from "../../../../core/connector/Action.ts"
import { intake } from "../../../../core/connector/Intake.ts"
import { Outbox } from "../../../../core/ports/Outbox.ts"
import { EventStore, type StoredEvent } from "../../../../core/ports/EventStore.ts"
import { makeEvidenceWatcher } from "../../../../core/connector/EvidenceWatcher.ts"
import { evidenceOutboxKind } from "../../../../core/connector/ObservedEvidence.ts"
import { computeSignature, encodeBody, importSigningKeys, sign } from "../../../../core/protocol/Signing.ts"
import { formatTimestamp } from "../../../../core/protocol/Timestamp.ts"
import { storageVariants } from "../../../support/storage.ts"
import { connect, enablePaymentModes, intakeInput, paymentIntakeInput, secrets, workspaceId } from "./support.ts"

const layer = () => Layer.mergeAll(storageVariants[0]!.layer(), NodeCrypto.layer)

type Body = Record<string, unknown>

/** An accepted action (its acknowledgement applied directly) and a completion body for it. */
const acceptedAction = (input: ActionIntake = intakeInput()) =>
  Effect.gen(function* () {
    const revision = yield* connect("http://127.0.0.1:1/connector")
    // A Payment action is taken only with a fresh payment capability.
    yield* enablePaymentModes(revision)
    const { actionRequestId } = yield* intake(workspaceId, input)
    const ledger = yield* ActionLedger
    const record = Option.getOrThrow(yield* ledger.get(actionRequestId))
    yield* ledger.transition({
      actionRequestId,
      expectedVersion: record.version,
      toState: "accepted",
      at: Date.now(),
      history: { at: Date.now(), trigger: "acknowledgement", detail: {} }
    })
    const completion: Body = {
      type: "service.customer_action.completion",
      protocolVersion: 1,
      workspaceId,
      actionRequestId,
      providerIdempotencyKey: record.providerIdempotencyKey,
      providerReference: "trial_ext_981",
      completionId: "cmp_" + actionRequestId,
      completedAt: formatTimestamp(Date.now()),
      outcome: "succeeded",
      evidence: {
        entitlement: "trial_extended",
        reasonCode: "extended",
        source: "authenticated_completion",
        accountId: input.accountId
      }
    }
    return { actionRequestId, completion }
  })

const signed = (
  body: Body | Uint8Array,
  options: { readonly secret?: string; readonly timestampShift?: number; readonly nonce?: string } = {}
) =>
  Effect.gen(function* () {
    const keys = yield* importSigningKeys({
      actionSigning: secrets.actionSigning,
      completion: options.secret === undefined ? secrets.completion : Redacted.make(options.secret)
    })
    const bytes = body instanceof Uint8Array ? body : encodeBody(body)
    const headers = yield* sign({
      purpose: "completion",
      keys,
      body: bytes,
      ...(options.nonce ? { nonce: options.nonce } : {})
    })
    if (options.timestampShift !== undefined) {
      // Re-sign at a shifted time.
      const timestamp = formatTimestamp(Date.now() + options.timestampShift)
      const signature = yield* computeSignature(
        keys.completion,
        "completion",
        timestamp,
        headers["x-service-customer-action-nonce"],
        bytes
      )
      return {
        headers: {
          ...headers,
          "x-service-customer-action-timestamp": timestamp,
          "x-service-customer-action-signature": signature
        },
        body: bytes
      }
    }
    return { headers, body: bytes }
  })

const refusal = <E extends { readonly _tag: string }>(effect: Effect.Effect<unknown, E>) =>
  Effect.map(
    Effect.flip(effect),
    (e) => e as unknown as { readonly _tag: string; readonly kind: string; readonly code: string }
  )

describe("completion intake", () => {
  it.live("a succeeded completion with matched catalog evidence verifies a non-payment action, through pending", () =>
    Effect.gen(function* () {
      const receive = yield* makeCompletionReceiver
      const { actionRequestId, completion } = yield* acceptedAction()
      const receipt = yield* receive(yield* signed(completion))
      assert.deepStrictEqual(receipt, {
        status: "recorded",
        actionRequestId,
        completionId: completion["completionId"],
        state: "verified"
      })
      const history = yield* Effect.flatMap(ActionLedger, (l) => l.history(actionRequestId))
      const last = history[history.length - 1]!
      assert.strictEqual(last.toState, "verified")
      const detail = last.detail as Record<string, unknown>
      assert.deepStrictEqual(detail["passedThrough"], ["pending"])
      // The provider reference is stored hashed, never raw.
      assert.notInclude(JSON.stringify(history), "trial_ext_981")
      assert.match(String(detail["providerReferenceHash"]), /^[0-9a-f]{64}$/)
    }).pipe(Effect.provide(layer()))
  )

  it.live(
    "a redelivery (same completionId, same body, fresh nonce) is acknowledged again without a second transition",
    () =>
      Effect.gen(function* () {
        const receive = yield* makeCompletionReceiver
        const { actionRequestId, completion } = yield* acceptedAction()
        const bytes = encodeBody(completion)
        yield* receive(yield* signed(bytes))
        const again = yield* receive(yield* signed(bytes))
        assert.strictEqual(again.status, "duplicate")
        assert.strictEqual(again.state, "verified")
        const history = yield* Effect.flatMap(ActionLedger, (l) => l.history(actionRequestId))
        assert.strictEqual(history.filter((h) => h.trigger === "completion").length, 1)
      }).pipe(Effect.provide(layer()))
  )

  // The spec's evidence shape is enough: `evidence.accountId` is optional, so a completion without it
  // must not stay pending.
  it.live(
    "a completion with exactly the spec's evidence fields (entitlement, reasonCode, source) verifies a non-payment action",
    () =>
      Effect.gen(function* () {
        const receive = yield* makeCompletionReceiver
        const { actionRequestId, completion } = yield* acceptedAction()
        const receipt = yield* receive(
          yield* signed({
            ...completion,
            evidence: { entitlement: "x", reasonCode: "ok", source: "authenticated_completion" }
          })
        )
        assert.strictEqual(receipt.state, "verified")
        const last = (yield* Effect.flatMap(ActionLedger, (l) => l.history(actionRequestId))).at(-1)!
        assert.strictEqual(
          (last.detail as { evidence: Record<string, unknown> }).evidence["matched"],
          "authenticated_completion"
        )
      }).pipe(Effect.provide(layer()))
  )

  it.live("evidence naming another account does not match: pending, account_mismatch in the history", () =>
    Effect.gen(function* () {
      const receive = yield* makeCompletionReceiver
      const { actionRequestId, completion } = yield* acceptedAction()
      const receipt = yield* receive(
        yield* signed({
          ...completion,
          evidence: { entitlement: "x", reasonCode: "ok", source: "authenticated_completion", accountId: "acct_other" }
        })
      )
      assert.strictEqual(receipt.state, "pending")
      const last = (yield* Effect.flatMap(ActionLedger, (l) => l.history(actionRequestId))).at(-1)!
      assert.strictEqual(
        (last.detail as { evidence: Record<string, unknown> }).evidence["unmatched"],
        "account_mismatch"
      )
    }).pipe(Effect.provide(layer()))
  )

  it.live("failed -> failed, unknown -> unresolved", () =>
    Effect.gen(function* () {
      const receive = yield* makeCompletionReceiver
      const a = yield* acceptedAction()
      assert.strictEqual((yield* receive(yield* signed({ ...a.completion, outcome: "failed" }))).state, "failed")
      const b = yield* acceptedAction()
      assert.strictEqual((yield* receive(yield* signed({ ...b.completion, outcome: "unknown" }))).state, "unresolved")
    }).pipe(Effect.provide(layer()))
  )

  it.live("a Payment action stays pending after succeeded and a reconciliation read is queued", () =>
    Effect.gen(function* () {
      const receive = yield* makeCompletionReceiver
      const input: ActionIntake = paymentIntakeInput()
      const { actionRequestId, completion } = yield* acceptedAction(input)
      const receipt = yield* receive(yield* signed(withSource(completion, "provider_event")))
      assert.strictEqual(receipt.state, "pending")
      const read = yield* Effect.flatMap(Outbox, (o) =>
        o.findByKey("service.reconcile", `${actionRequestId}:${completion["completionId"]}`)
      )
      assert.isTrue(Option.isSome(read))
    }).pipe(Effect.provide(layer()))
  )

  describe("refused, with nothing recorded", () => {
    const expectRefused = (
      kind: string,
      code: string,
      make: (c: Body) => Effect.Effect<{ headers: Record<string, string>; body: Uint8Array }, never, Crypto>
    ) =>
      Effect.gen(function* () {
        const receive = yield* makeCompletionReceiver
        const { actionRequestId, completion } = yield* acceptedAction()
        const error = yield* refusal(receive(yield* make(completion)))
        assert.strictEqual(error._tag, "CompletionRefused")
        assert.strictEqual(error.kind, kind)
        assert.strictEqual(error.code, code)
        const record = Option.getOrThrow(yield* Effect.flatMap(ActionLedger, (l) => l.get(actionRequestId)))
        assert.strictEqual(record.state, "accepted")
      }).pipe(Effect.provide(layer()))

    it.live("wrong completion secret: 401", () =>
      expectRefused("unauthenticated", "invalid_signature", (c) =>
        signed(c, { secret: "cs_wrong_wrong_wrong_wrong_wrong_wrong_wrong" })
      )
    )
    it.live("signed with the action signing secret instead: 401", () =>
      expectRefused("unauthenticated", "invalid_signature", (c) =>
        signed(c, { secret: Redacted.value(secrets.actionSigning) })
      )
    )
    it.live("unknown workspace: the same 401 as a bad signature", () =>
      expectRefused("unauthenticated", "invalid_signature", (c) =>
        signed({ ...c, workspaceId: "9f8e7d6c-5b4a-4a3b-9c2d-1e0f9a8b7c6d" })
      )
    )
    it.live("tampered body: 401", () =>
      expectRefused("unauthenticated", "invalid_signature", (c) =>
        Effect.map(signed(c), (s) => ({ ...s, body: encodeBody({ ...c, outcome: "failed" }) }))
      )
    )
    it.live("stale timestamp: 401", () =>
      expectRefused("unauthenticated", "stale_timestamp", (c) => signed(c, { timestampShift: -10 * 60_000 }))
    )
    it.live("future timestamp: 401", () =>
      expectRefused("unauthenticated", "future_timestamp", (c) => signed(c, { timestampShift: 10 * 60_000 }))
    )
    it.live("missing signature: 401", () =>
      expectRefused("unauthenticated", "invalid_signature", (c) =>
        Effect.map(signed(c), (s) => {
          const { ["x-service-customer-action-signature"]: _, ...headers } = s.headers
          return { headers: headers as Record<string, string>, body: s.body }
        })
      )
    )
    it.live("unknown action: 404", () =>
      expectRefused("unknown_action", "unknown_action", (c) =>
        signed({ ...c, actionRequestId: "8d0f2b4c-6e8a-4c0d-9f3b-5c7e9a1d3f5b" })
      )
    )
    it.live("idempotency key of another action: 422", () =>
      expectRefused("binding_mismatch", "idempotency_key_mismatch", (c) =>
        signed({ ...c, providerIdempotencyKey: "pva_" + "d".repeat(64) })
      )
    )
    it.live("extra field: 400 with the path", () =>
      expectRefused("invalid", "invalid_body", (c) => signed({ ...c, extra: true }))
    )
    // "Verify the raw body, then parse": a duplicate key or unstorable text in an authentic body is
    // the strict parser's refusal (400), only after the signature verified; unsigned, it is 401.
    const withDuplicate = (c: Body) =>
      new TextEncoder().encode(
        JSON.stringify(c)
          .replace(/^\{/, `{"reasonCode":"x",`)
          .replace(/"evidence":\{/, `"evidence":{"source":"x",`)
      )
    it.live(
      "an authentic completion with a duplicate key: MalformedBody duplicate_key after verification, nothing recorded",
      () =>
        Effect.gen(function* () {
          const receive = yield* makeCompletionReceiver
          const { actionRequestId, completion } = yield* acceptedAction()
          const error = yield* Effect.flip(receive(yield* signed(withDuplicate(completion))))
          assert.strictEqual(error._tag, "MalformedBody")
          assert.strictEqual((error as { readonly reason?: string }).reason, "duplicate_key")
          const forged = yield* Effect.flip(
            receive(
              yield* signed(withDuplicate(completion), { secret: "cs_wrong_wrong_wrong_wrong_wrong_wrong_wrong" })
            )
          )
          assert.strictEqual(forged._tag, "CompletionRefused")
          assert.strictEqual((forged as { readonly kind?: string }).kind, "unauthenticated")
          const record = Option.getOrThrow(yield* Effect.flatMap(ActionLedger, (l) => l.get(actionRequestId)))
          assert.strictEqual(record.state, "accepted")
        }).pipe(Effect.provide(layer()))
    )
    it.live("an authentic completion with a NUL in a string: MalformedBody unstorable_text after verification", () =>
      Effect.gen(function* () {
        const receive = yield* makeCompletionReceiver
        const { completion } = yield* acceptedAction()
        // JSON.stringify writes the NUL as the escape `\u0000`: valid JSON, unstorable text.
        const bytes = new TextEncoder().encode(JSON.stringify({ ...completion, providerReference: "ref\u0000x" }))
        const error = yield* Effect.flip(receive(yield* signed(bytes)))
        assert.strictEqual(error._tag, "MalformedBody")
        assert.strictEqual((error as { readonly reason?: string }).reason, "unstorable_text")
      }).pipe(Effect.provide(layer()))
    )
    it.live("outcome verified (never a completion outcome): 400", () =>
      expectRefused("invalid", "invalid_body", (c) => signed({ ...c, outcome: "verified" }))
    )
  })

  it.live("a replayed nonce is refused", () =>
    Effect.gen(function* () {
      const receive = yield* makeCompletionReceiver
      const { completion } = yield* acceptedAction()
      const delivery = yield* signed(completion)
      yield* receive(delivery)
      const error = yield* refusal(receive(delivery))
      assert.strictEqual(error.code, "replayed_nonce")
    }).pipe(Effect.provide(layer()))
  )

  it.live("a redelivery while the action can still take a completion is a duplicate, recorded once", () =>
    Effect.gen(function* () {
      const receive = yield* makeCompletionReceiver
      const { actionRequestId, completion } = yield* acceptedAction()
      // `unknown` leaves the action unresolved, a state that takes a later completion: the
      // redelivery is told apart by its completion id alone.
      const bytes = encodeBody({ ...completion, outcome: "unknown" })
      assert.strictEqual((yield* receive(yield* signed(bytes))).status, "recorded")
      const again = yield* receive(yield* signed(bytes))
      assert.strictEqual(again.status, "duplicate")
      assert.strictEqual(again.state, "unresolved")
      const history = yield* Effect.flatMap(ActionLedger, (l) => l.history(actionRequestId))
      assert.strictEqual(history.filter((h) => h.trigger === "completion").length, 1)
    }).pipe(Effect.provide(layer()))
  )

  it.live("the same completionId with a different body is a conflict and changes nothing", () =>
    Effect.gen(function* () {
      const receive = yield* makeCompletionReceiver
      const { actionRequestId, completion } = yield* acceptedAction()
      yield* receive(yield* signed({ ...completion, outcome: "unknown" }))
      const error = yield* refusal(receive(yield* signed({ ...completion, outcome: "failed" })))
      assert.strictEqual(error.kind, "conflict")
      assert.strictEqual(error.code, "completion_id_conflict")
      const record = Option.getOrThrow(yield* Effect.flatMap(ActionLedger, (l) => l.get(actionRequestId)))
      assert.strictEqual(record.state, "unresolved")
    }).pipe(Effect.provide(layer()))
  )

  it.live("a completion for a rejected action is refused with 409", () =>
    Effect.gen(function* () {
      const receive = yield* makeCompletionReceiver
      yield* connect("http://127.0.0.1:1/connector")
      const { actionRequestId } = yield* intake(workspaceId, intakeInput())
      const ledger = yield* ActionLedger
      const record = Option.getOrThrow(yield* ledger.get(actionRequestId))
      yield* ledger.transition({
        actionRequestId,
        expectedVersion: 1,
        toState: "rejected",
        at: Date.now(),
        history: { at: Date.now(), trigger: "acknowledgement", detail: {} }
      })
      const error = yield* refusal(
        receive(
          yield* signed({
            type: "service.customer_action.completion",
            protocolVersion: 1,
            workspaceId,
            actionRequestId,
            providerIdempotencyKey: record.providerIdempotencyKey,
            providerReference: "r1",
            completionId: "cmp_rejected",
            completedAt: formatTimestamp(Date.now()),
            outcome: "succeeded",
            evidence: { entitlement: "", reasonCode: "ok", source: "entitlement_state", accountId: "acct_42" }
          })
        )
      )
      assert.strictEqual(error.kind, "conflict")
      assert.strictEqual(error.code, "completion_not_applicable")
    }).pipe(Effect.provide(layer()))
  )
})

describe("completion intake: who may answer", () => {
  const otherWorkspace = {
    workspaceId: "9f8e7d6c-5b4a-4a3b-9c2d-1e0f9a8b7c6d",
    connectionId: "5e4d3c2b-1a09-4f8e-9d7c-6b5a4f3e2d1c",
    secrets: {
      actionSigning: Redacted.make("as_other_workspace_0123456789abcdef0123"),
      completion: Redacted.make("cs_other_workspace_0123456789abcdef0123")
    }
  }

  it.live("another workspace's action, signed with that other workspace's own secret: 404, nothing recorded", () =>
    Effect.gen(function* () {
      const receive = yield* makeCompletionReceiver
      const { actionRequestId, completion } = yield* acceptedAction()
      yield* connect("http://127.0.0.1:1/connector", otherWorkspace)
      const error = yield* refusal(
        receive(
          yield* signed(
            { ...completion, workspaceId: otherWorkspace.workspaceId },
            {
              secret: Redacted.value(otherWorkspace.secrets.completion)
            }
          )
        )
      )
      assert.strictEqual(error.kind, "unknown_action")
      assert.strictEqual(error.code, "unknown_action")
      assert.strictEqual(
        Option.getOrThrow(yield* Effect.flatMap(ActionLedger, (l) => l.get(actionRequestId))).state,
        "accepted"
      )
    }).pipe(Effect.provide(layer()))
  )

  it.live("an unknown workspace and a bad signature are indistinguishable, whatever the headers", () =>
    Effect.gen(function* () {
      const receive = yield* makeCompletionReceiver
      const { completion } = yield* acceptedAction()
      const unknownWorkspace = { ...completion, workspaceId: "1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d" }
      const answers = yield* Effect.forEach(
        [
          // Fresh, malformed signature header: known vs unknown workspace.
          Effect.map(signed(completion), (s) => ({
            ...s,
            headers: { ...s.headers, "x-service-customer-action-signature": "v1=" + "Z".repeat(64) }
          })),
          Effect.map(signed(unknownWorkspace), (s) => ({
            ...s,
            headers: { ...s.headers, "x-service-customer-action-signature": "v1=" + "Z".repeat(64) }
          })),
          // Fresh, well-formed but wrong.
          signed(completion, { secret: "cs_wrong_wrong_wrong_wrong_wrong_wrong_wrong" }),
          signed(unknownWorkspace)
        ],
        (make) => Effect.flatMap(make, (delivery) => refusal(receive(delivery)))
      )
      for (const a of answers)
        assert.deepStrictEqual(
          [a.kind, a.code, (a as unknown as { detail: string }).detail],
          [answers[0]!.kind, answers[0]!.code, (answers[0] as unknown as { detail: string }).detail]
        )
      // Header checks that need no secret answer the same for both: stale is stale either way.
      const stale = yield* Effect.forEach([completion, unknownWorkspace], (body) =>
        Effect.flatMap(signed(body, { timestampShift: -10 * 60_000 }), (d) => refusal(receive(d)))
      )
      assert.deepStrictEqual(
        stale.map((e) => e.code),
        ["stale_timestamp", "stale_timestamp"]
      )
    }).pipe(Effect.provide(layer()))
  )

  it.live(
    "after a secret rotation the replaced revision's secret still completes its actions; once retired it does not",
    () =>
      Effect.gen(function* () {
        const receive = yield* makeCompletionReceiver
        const { actionRequestId, completion } = yield* acceptedAction()
        const rotated = {
          workspaceId,
          connectionId: "6a2e9c14-8b3d-4f5a-a1c7-2d4e6f8a0b13",
          secrets: {
            actionSigning: Redacted.make("as_rotated_0123456789abcdef0123456789ab"),
            completion: Redacted.make("cs_rotated_0123456789abcdef0123456789ab")
          }
        }
        const next = yield* connect("http://127.0.0.1:1/connector", rotated)
        const old = next - 1
        // The new secret works, the old one too while its revision is only replaced.
        const first = yield* receive(yield* signed({ ...completion, outcome: "unknown" }))
        assert.strictEqual(first.state, "unresolved")
        const second = yield* receive(
          yield* signed(
            { ...completion, completionId: "cmp_rotated", outcome: "failed" },
            {
              secret: Redacted.value(rotated.secrets.completion)
            }
          )
        )
        assert.strictEqual(second.state, "failed")
        const store = yield* ConnectionStore
        assert.isTrue(yield* store.retire({ connectionId: rotated.connectionId, revision: old, now: Date.now() }))
        const error = yield* refusal(receive(yield* signed({ ...completion, completionId: "cmp_after_retire" })))
        assert.strictEqual(error.kind, "unauthenticated")
        assert.strictEqual(error.code, "invalid_signature")
        const history = yield* Effect.flatMap(ActionLedger, (l) => l.history(actionRequestId))
        assert.strictEqual(history.filter((h) => h.trigger === "completion").length, 2)
      }).pipe(Effect.provide(layer()))
  )
})

for (const storage of storageVariants.filter((v) => v.name !== "memory")) {
  describe.skipIf(!storage.available)(`completion intake (${storage.name})`, () => {
    it.live(
      "recorded once with its claim; a redelivery answered again; another body under the same id refused",
      () =>
        Effect.gen(function* () {
          const receive = yield* makeCompletionReceiver
          const { actionRequestId, completion } = yield* acceptedAction()
          const bytes = encodeBody(completion)
          assert.strictEqual((yield* receive(yield* signed(bytes))).status, "recorded")
          // Concurrent redeliveries: one transition in all.
          const again = yield* Effect.forEach([1, 2, 3], () => Effect.flatMap(signed(bytes), receive), {
            concurrency: "unbounded"
          })
          assert.deepStrictEqual(
            again.map((r) => r.status),
            ["duplicate", "duplicate", "duplicate"]
          )
          const conflict = yield* refusal(receive(yield* signed({ ...completion, outcome: "failed" })))
          assert.strictEqual(conflict.code, "completion_id_conflict")
          const history = yield* Effect.flatMap(ActionLedger, (l) => l.history(actionRequestId))
          assert.deepStrictEqual(
            history.map((h) => h.toState),
            ["dispatching", "accepted", "verified"]
          )
          assert.notInclude(JSON.stringify(history), "trial_ext_981")
        }).pipe(Effect.provide(Layer.mergeAll(storage.layer(), NodeCrypto.layer))),
      30_000
    )

    it.live(
      "two different completions racing for one action: both recorded in order, neither lost",
      () =>
        Effect.gen(function* () {
          const receive = yield* makeCompletionReceiver
          const { actionRequestId, completion } = yield* acceptedAction()
          const receipts = yield* Effect.forEach(
            [
              { ...completion, completionId: "cmp_a", outcome: "unknown" },
              { ...completion, completionId: "cmp_b", outcome: "unknown" }
            ],
            (body) => Effect.flatMap(signed(body), receive),
            { concurrency: "unbounded" }
          )
          assert.deepStrictEqual(
            receipts.map((r) => r.status),
            ["recorded", "recorded"]
          )
          const history = yield* Effect.flatMap(ActionLedger, (l) => l.history(actionRequestId))
          assert.strictEqual(history.filter((h) => h.trigger === "completion").length, 2)
        }).pipe(Effect.provide(Layer.mergeAll(storage.layer(), NodeCrypto.layer))),
      30_000
    )
  })
}

/**
 * The action is verified only on evidence the service holds itself. For
 * `entitlement_state` that is an `entitlement_active` event it received for the same account with
 * the action's journey and published version, occurring at or after the intake; it may arrive
 * before the completion (found at once) or after it (found by the evidence watcher).
 */
const entitlementEvent = (
  over: {
    readonly accountId?: string
    readonly journeyId?: string
    readonly versionId?: string
    readonly name?: string
    readonly occurredAt?: number
  } = {}
) => {
  const input = intakeInput()
  const occurredAt = over.occurredAt ?? Date.now()
  const id = globalThis.crypto.randomUUID()
  const event: StoredEvent = {
    id,
    workspaceId,
    eventId: `evt_${id}`,
    accountId: over.accountId ?? input.accountId,
    eventName: over.name ?? "entitlement_active",
    occurredAt,
    receivedAt: Date.now(),
    payloadHash: "d".repeat(64),
    body: {
      event_id: `evt_${id}`,
      event_name: over.name ?? "entitlement_active",
      account_id: over.accountId ?? input.accountId,
      timestamp: new Date(occurredAt).toISOString(),
      semantic_type: "activation",
      event_kind: "product_action",
      properties: {
        feature_key: "reports",
        funnel_journey_id: over.journeyId ?? input.binding.journeyId,
        funnel_version_id: over.versionId ?? input.binding.publishedVersionId
      }
    }
  }
  return Effect.flatMap(EventStore, (store) => store.append([event]))
}

const withSource = (completion: Body, source: string): Body => ({
  ...completion,
  evidence: { entitlement: "trial_extended", reasonCode: "extended", source }
})

const watchOf = (actionRequestId: string, completionId: unknown) =>
  Effect.flatMap(Outbox, (o) => o.findByKey(evidenceOutboxKind, `${actionRequestId}:${completionId}:evidence`))

const evidenceOf = (actionRequestId: string) =>
  Effect.map(
    Effect.flatMap(ActionLedger, (l) => l.history(actionRequestId)),
    (history) =>
      (history.find((h) => h.trigger === "completion")?.detail as { readonly evidence?: unknown } | undefined)?.evidence
  )

/** One look by the evidence watcher at every due watch. */
const watchOnce = Effect.gen(function* () {
  const watcher = yield* makeEvidenceWatcher({ owner: `watch-${globalThis.crypto.randomUUID()}` })
  return yield* Effect.forEach(yield* watcher.lease(100), watcher.look)
})

for (const storage of storageVariants) {
  describe.skipIf(!storage.available)(`evidence the service observed itself (${storage.name})`, () => {
    const provided = <A, E>(
      effect: Effect.Effect<A, E, Layer.Layer.Success<ReturnType<typeof storage.layer>> | Crypto>
    ) => effect.pipe(Effect.provide(Layer.mergeAll(storage.layer(), NodeCrypto.layer)))

    it.live(
      "entitlement_state, the event received before the completion: verified at once",
      () =>
        provided(
          Effect.gen(function* () {
            const receive = yield* makeCompletionReceiver
            const { actionRequestId, completion } = yield* acceptedAction()
            yield* entitlementEvent()
            const receipt = yield* receive(yield* signed(withSource(completion, "entitlement_state")))
            assert.strictEqual(receipt.state, "verified")
            assert.deepStrictEqual(yield* evidenceOf(actionRequestId), {
              source: "entitlement_state",
              reasonCode: "extended",
              matched: "entitlement_state",
              standing: "observed"
            })
            assert.isTrue(Option.isNone(yield* watchOf(actionRequestId, completion["completionId"])))
          })
        ),
      30_000
    )

    it.live(
      "entitlement_state, the event received after the completion: pending, then verified by the evidence watcher",
      () =>
        provided(
          Effect.gen(function* () {
            const receive = yield* makeCompletionReceiver
            const { actionRequestId, completion } = yield* acceptedAction()
            const receipt = yield* receive(yield* signed(withSource(completion, "entitlement_state")))
            assert.strictEqual(receipt.state, "pending")
            assert.isTrue(Option.isSome(yield* watchOf(actionRequestId, completion["completionId"])))
            // A look before the event arrives changes nothing.
            assert.include(yield* watchOnce, "waiting")
            yield* entitlementEvent()
            // The watch was rescheduled; make it due again by looking after its delay.
            yield* Effect.sleep("2500 millis")
            assert.include(yield* watchOnce, "verified")
            const record = Option.getOrThrow(yield* Effect.flatMap(ActionLedger, (l) => l.get(actionRequestId)))
            assert.strictEqual(record.state, "verified")
            const history = yield* Effect.flatMap(ActionLedger, (l) => l.history(actionRequestId))
            assert.deepStrictEqual(
              history.map((h) => `${h.trigger}:${h.toState}`),
              ["intake:dispatching", "acknowledgement:accepted", "completion:pending", "evidence_observed:verified"]
            )
          })
        ),
      30_000
    )

    const notEvidence: ReadonlyArray<readonly [string, Parameters<typeof entitlementEvent>[0]]> = [
      ["another account's event", { accountId: "acct_other" }],
      ["another journey", { journeyId: "9e5a7b9c-1d2f-4b4c-8e6a-8f0b2c4d6e8a" }],
      ["another published version", { versionId: "9a7c9d1e-3f4b-4d6e-8a8c-0b2d4e6f8a0c" }],
      ["an event that occurred before the intake", { occurredAt: Date.now() - 3_600_000 }],
      ["an event of another name (entitlement_state needs entitlement_active)", { name: "feature_adopted" }]
    ]
    for (const [name, over] of notEvidence) {
      it.live(
        `entitlement_state is not matched by ${name}: the action stays pending`,
        () =>
          provided(
            Effect.gen(function* () {
              const receive = yield* makeCompletionReceiver
              const { actionRequestId, completion } = yield* acceptedAction()
              yield* entitlementEvent(over)
              assert.strictEqual(
                (yield* receive(yield* signed(withSource(completion, "entitlement_state")))).state,
                "pending"
              )
              assert.deepStrictEqual(yield* watchOnce, ["waiting"])
              assert.strictEqual(
                Option.getOrThrow(yield* Effect.flatMap(ActionLedger, (l) => l.get(actionRequestId))).state,
                "pending"
              )
            })
          ),
        30_000
      )
    }

    it.live(
      "customer_server_event accepts any Direct API event of the account carrying the action's funnel ids",
      () =>
        provided(
          Effect.gen(function* () {
            const receive = yield* makeCompletionReceiver
            const { completion } = yield* acceptedAction()
            yield* entitlementEvent({ name: "trial_extended" })
            assert.strictEqual(
              (yield* receive(yield* signed(withSource(completion, "customer_server_event")))).state,
              "verified"
            )
          })
        ),
      30_000
    )

    it.live(
      "a type the action's catalog entry does not accept (a provider type for an extend-trial) never verifies: pending, no watch",
      () =>
        provided(
          Effect.gen(function* () {
            const receive = yield* makeCompletionReceiver
            const { actionRequestId, completion } = yield* acceptedAction()
            yield* entitlementEvent()
            assert.strictEqual(
              (yield* receive(yield* signed(withSource(completion, "provider_event")))).state,
              "pending"
            )
            assert.deepStrictEqual(yield* evidenceOf(actionRequestId), {
              source: "provider_event",
              reasonCode: "extended",
              unmatched: "source_not_accepted"
            })
            assert.isTrue(Option.isNone(yield* watchOf(actionRequestId, completion["completionId"])))
          })
        ),
      30_000
    )

    it.live(
      "a Payment action's completion naming the signed completion itself is never enough: pending, no reconciliation read",
      () =>
        provided(
          Effect.gen(function* () {
            const receive = yield* makeCompletionReceiver
            const { actionRequestId, completion } = yield* acceptedAction(paymentIntakeInput())
            const receipt = yield* receive(yield* signed(withSource(completion, "authenticated_completion")))
            assert.strictEqual(receipt.state, "pending")
            // The fixture catalog accepts only reconciliation types for Payment actions.
            assert.deepStrictEqual(yield* evidenceOf(actionRequestId), {
              source: "authenticated_completion",
              reasonCode: "extended",
              unmatched: "source_not_accepted"
            })
            const read = yield* Effect.flatMap(Outbox, (o) =>
              o.findByKey("service.reconcile", `${actionRequestId}:${completion["completionId"]}`)
            )
            assert.isTrue(Option.isNone(read))
          })
        ),
      30_000
    )
  })
}
