import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as TestClock from "effect/TestClock"
import { Acknowledgement } from "../../../../core/protocol/messages/Acknowledgement.ts"
import { ApprovalPrepareResponse, ReviewProjection } from "../../../../core/protocol/messages/Approval.ts"
import { CatalogEvidenceType, Completion, Evidence } from "../../../../core/protocol/messages/Completion.ts"
import { continuationWindowMillis, PaymentContinuation } from "../../../../core/protocol/messages/Continuation.ts"
import { ExecutionRequest, isExtendTrialOperation, Operation } from "../../../../core/protocol/messages/Execution.ts"
import { HandshakeAck, HandshakeRequest } from "../../../../core/protocol/messages/Handshake.ts"
import { MessageType } from "../../../../core/protocol/messages/Message.ts"
import { PaymentObservation, PaymentReconciliationRequest } from "../../../../core/protocol/messages/Reconciliation.ts"
import { formatTimestamp, parseTimestamp } from "../../../../core/protocol/Timestamp.ts"
import { vectors } from "../../../support/vectors.ts"

// ---------------------------------------------------------------------------------------------
// helpers
// ---------------------------------------------------------------------------------------------

type Json = Record<string, unknown>

/** The parsed raw body of a named signature vector from the shared conformance file. */
const vectorBody = (name: string): Json => {
  const vector = vectors.signatures.find((v) => v.name === name)
  if (vector === undefined) throw new Error(`no vector named ${name}`)
  return JSON.parse(vector.rawBody)
}

/** A deep copy of `body` with the value at `path` replaced (or added). */
const withField = (body: Json, path: ReadonlyArray<string>, value: unknown): Json => {
  const copy = structuredClone(body)
  let at: Json = copy
  for (const key of path.slice(0, -1)) at = at[key] as Json
  at[path[path.length - 1]!] = value
  return copy
}

/** A deep copy of `body` without the field at `path`. */
const withoutField = (body: Json, path: ReadonlyArray<string>): Json => {
  const copy = structuredClone(body)
  let at: Json = copy
  for (const key of path.slice(0, -1)) at = at[key] as Json
  delete at[path[path.length - 1]!]
  return copy
}

/** The dotted paths of every issue in a parse error. */
const issuePaths = (error: ParseResult.ParseError): Array<string> =>
  ParseResult.ArrayFormatter.formatErrorSync(error).map((issue) => issue.path.join("."))

const decodeSync = <A, I>(schema: Schema.Schema<A, I, never>, input: unknown) =>
  Schema.decodeUnknownEither(schema)(input)

/** Asserts a synchronous decode succeeds and returns the input unchanged (nothing stripped). */
const accepts = <A, I>(schema: Schema.Schema<A, I, never>, input: unknown): void => {
  const result = decodeSync(schema, input)
  if (Either.isLeft(result)) assert.fail(ParseResult.TreeFormatter.formatErrorSync(result.left))
  else assert.deepStrictEqual(result.right as unknown, input)
}

/** Asserts a synchronous decode fails; when `path` is given, an issue names that path. */
const rejects = <A, I>(schema: Schema.Schema<A, I, never>, input: unknown, path?: string): void => {
  const result = decodeSync(schema, input)
  if (Either.isRight(result)) assert.fail(`expected a rejection, got ${JSON.stringify(result.right)}`)
  else if (path !== undefined) assert.include(issuePaths(result.left), path)
}

/** The Effect form: for schemas containing the continuation, whose expiry reads the Clock. */
const acceptsEffect = <A, I>(schema: Schema.Schema<A, I, never>, input: unknown) =>
  Effect.gen(function* () {
    const result = yield* Effect.either(Schema.decodeUnknown(schema)(input))
    if (Either.isLeft(result)) assert.fail(ParseResult.TreeFormatter.formatErrorSync(result.left))
    else assert.deepStrictEqual(result.right as unknown, input)
  })

const rejectsEffect = <A, I>(schema: Schema.Schema<A, I, never>, input: unknown, path?: string) =>
  Effect.gen(function* () {
    const result = yield* Effect.either(Schema.decodeUnknown(schema)(input))
    if (Either.isRight(result)) assert.fail(`expected a rejection, got ${JSON.stringify(result.right)}`)
    else if (path !== undefined) assert.include(issuePaths(result.left), path)
  })

const workspaceId = "6f1d2c3b-4a5e-4f60-8a71-92b3c4d5e6f7"
const actionRequestId = "3c2b1a09-8f7e-4d6c-a5b4-c3d2e1f0a9b8"
const providerIdempotencyKey = vectors.idempotencyKeys[0]!.key
const hashA = "2ae0c92db1044ac208fd50e24ca4872f1760c4543ab429213fb8caf74f48882f"
const hashB = "a9bab1d429ffbcf6dde708bb255f03187f7775a33ff2049030f4dd4e8386bf5e"
const now = parseTimestamp("2026-11-22T10:15:30.000Z")!

// ---------------------------------------------------------------------------------------------
// Handshake
// ---------------------------------------------------------------------------------------------

describe("HandshakeRequest", () => {
  const body = vectorBody("handshake_request")

  it("accepts the conformance vector's body", () => accepts(HandshakeRequest, body))

  it("rejects an unknown field", () => rejects(HandshakeRequest, withField(body, ["extra"], 1), "extra"))

  it("rejects a wrong type literal", () =>
    rejects(HandshakeRequest, withField(body, ["type"], "service.customer_action.handshake_ack"), "type"))

  it("rejects protocolVersion other than the integer 1", () => {
    rejects(HandshakeRequest, withField(body, ["protocolVersion"], 2), "protocolVersion")
    rejects(HandshakeRequest, withField(body, ["protocolVersion"], "1"), "protocolVersion")
  })

  it("rejects a challenge outside 16..160 visible ASCII", () => {
    rejects(HandshakeRequest, withField(body, ["challenge"], "x".repeat(15)), "challenge")
    rejects(HandshakeRequest, withField(body, ["challenge"], "x".repeat(161)), "challenge")
    rejects(HandshakeRequest, withField(body, ["challenge"], "has a space in it!"), "challenge")
    accepts(HandshakeRequest, withField(body, ["challenge"], "x".repeat(160)))
  })

  it("rejects a non-UUID id and a non-RFC 3339 sentAt", () => {
    rejects(HandshakeRequest, withField(body, ["connectionId"], "not-a-uuid"), "connectionId")
    rejects(HandshakeRequest, withField(body, ["sentAt"], "2026-11-22 10:15:30"), "sentAt")
  })

  it("rejects a missing field", () => rejects(HandshakeRequest, withoutField(body, ["workspaceId"]), "workspaceId"))
})

describe("HandshakeAck", () => {
  const body: Json = {
    challenge: "n0nce-7f3a9c2e1b4d6f8a",
    connectionId: "0a1b2c3d-4e5f-4a6b-9c7d-8e9fa0b1c2d3",
    protocolVersion: 1,
    status: "ready",
    type: "service.customer_action.handshake_ack",
    workspaceId
  }
  const withProof = withField(body, ["paymentCapabilities"], {
    connectedAccountReferenceHash: vectors.connectedAccountReferenceHashes[0]!.hash,
    connectionRevision: 0,
    livemode: false,
    modes: ["one_time_purchase", "setup_only"]
  })

  it("accepts a generic acknowledgement and one with a capability proof", () => {
    accepts(HandshakeAck, body)
    accepts(HandshakeAck, withProof)
    accepts(HandshakeAck, withField(withProof, ["paymentCapabilities", "modes"], []))
    accepts(
      HandshakeAck,
      withField(
        withProof,
        ["paymentCapabilities", "modes"],
        ["existing_subscription_change", "new_subscription", "one_time_purchase", "setup_only", "recover_payment"]
      )
    )
  })

  it("rejects unknown fields at top level and inside the proof", () => {
    rejects(HandshakeAck, withField(body, ["extra"], true), "extra")
    rejects(HandshakeAck, withField(withProof, ["paymentCapabilities", "extra"], true), "paymentCapabilities.extra")
  })

  it("rejects a wrong status and a wrong type literal", () => {
    rejects(HandshakeAck, withField(body, ["status"], "ok"), "status")
    rejects(HandshakeAck, withField(body, ["type"], "service.customer_action.handshake"), "type")
  })

  it("rejects an explicit undefined for the optional proof", () =>
    rejects(HandshakeAck, withField(body, ["paymentCapabilities"], undefined), "paymentCapabilities"))

  it("rejects an invalid proof", () => {
    const at = (field: string, value: unknown) => withField(withProof, ["paymentCapabilities", field], value)
    rejects(HandshakeAck, at("modes", ["setup_only", "setup_only"]), "paymentCapabilities.modes")
    rejects(HandshakeAck, at("modes", ["card"]), "paymentCapabilities.modes.0")
    rejects(HandshakeAck, at("connectionRevision", -1), "paymentCapabilities.connectionRevision")
    rejects(HandshakeAck, at("connectionRevision", 1.5), "paymentCapabilities.connectionRevision")
    rejects(HandshakeAck, at("livemode", "false"), "paymentCapabilities.livemode")
    rejects(HandshakeAck, at("connectedAccountReferenceHash", hashA.toUpperCase()))
    rejects(HandshakeAck, withoutField(withProof, ["paymentCapabilities", "modes"]), "paymentCapabilities.modes")
  })

  it("rejects a missing echo", () => rejects(HandshakeAck, withoutField(body, ["challenge"]), "challenge"))
})

// ---------------------------------------------------------------------------------------------
// Execution
// ---------------------------------------------------------------------------------------------

describe("ExecutionRequest", () => {
  const body = vectorBody("dispatch_request_compact")
  const operation = (value: unknown) => withField(body, ["action", "operation"], value)
  const extendTrial = (body.action as Json).operation as Json

  it("accepts both conformance vectors' bodies (compact and pretty)", () => {
    accepts(ExecutionRequest, body)
    accepts(ExecutionRequest, vectorBody("dispatch_request_pretty_same_value"))
  })

  it("rejects unknown fields at top level and at every nesting level", () => {
    rejects(ExecutionRequest, withField(body, ["extra"], 1), "extra")
    rejects(ExecutionRequest, withField(body, ["action", "extra"], 1), "action.extra")
    rejects(ExecutionRequest, withField(body, ["action", "safeTerms", "extra"], 1), "action.safeTerms.extra")
    rejects(ExecutionRequest, withField(body, ["actor", "extra"], 1), "actor.extra")
    rejects(ExecutionRequest, withField(body, ["binding", "destination"], "https://x"), "binding.destination")
    rejects(ExecutionRequest, withField(body, ["action", "operation", "trialRef", "extra"], 1))
    rejects(ExecutionRequest, withField(body, ["action", "operation", "extra"], 1))
  })

  it("rejects a wrong type literal and a wrong field type", () => {
    rejects(ExecutionRequest, withField(body, ["type"], "service.customer_action.ack"), "type")
    rejects(ExecutionRequest, withField(body, ["accountId"], 42), "accountId")
    rejects(ExecutionRequest, withField(body, ["binding", "offerId"], "offer_1"), "binding.offerId")
  })

  it("rejects out-of-range lengths", () => {
    rejects(ExecutionRequest, withField(body, ["accountId"], ""), "accountId")
    rejects(ExecutionRequest, withField(body, ["accountId"], "a".repeat(257)), "accountId")
    rejects(ExecutionRequest, withField(body, ["action", "key"], "k".repeat(129)), "action.key")
    rejects(
      ExecutionRequest,
      withField(body, ["action", "safeTerms", "label"], "l".repeat(201)),
      "action.safeTerms.label"
    )
    rejects(
      ExecutionRequest,
      withField(body, ["action", "safeTerms", "confirmation"], ""),
      "action.safeTerms.confirmation"
    )
    rejects(ExecutionRequest, withField(body, ["actor", "roleKey"], ""), "actor.roleKey")
    rejects(ExecutionRequest, withField(body, ["requestNonce"], "short-nonce"), "requestNonce")
    accepts(ExecutionRequest, withField(body, ["accountId"], "a".repeat(256)))
  })

  it("rejects a malformed idempotency key", () => {
    rejects(ExecutionRequest, withField(body, ["providerIdempotencyKey"], providerIdempotencyKey.toUpperCase()))
    rejects(ExecutionRequest, withField(body, ["providerIdempotencyKey"], providerIdempotencyKey.slice(4)))
  })

  it("rejects missing required fields", () => {
    rejects(ExecutionRequest, withoutField(body, ["requestedAt"]), "requestedAt")
    rejects(ExecutionRequest, withoutField(body, ["binding", "journeyId"]), "binding.journeyId")
    rejects(ExecutionRequest, withoutField(body, ["action", "operation", "trialRef"]))
  })

  it("rejects an extend_trial operation with a bad extensionDays instead of treating it as another family", () => {
    for (const bad of [0, 366, 1.5, -1, "14", null]) {
      rejects(ExecutionRequest, withField(body, ["action", "operation", "extensionDays"], bad))
    }
    accepts(ExecutionRequest, withField(body, ["action", "operation", "extensionDays"], 1))
    accepts(ExecutionRequest, withField(body, ["action", "operation", "extensionDays"], 365))
  })

  it("rejects an invalid trialRef", () => {
    rejects(ExecutionRequest, withField(body, ["action", "operation", "trialRef", "version"], -1))
    rejects(ExecutionRequest, withField(body, ["action", "operation", "trialRef", "entityKind"], "k".repeat(65)))
    rejects(ExecutionRequest, withField(body, ["action", "operation", "trialRef", "entityKey"], ""))
  })

  it("accepts an unknown family with its own fields, and keeps them", () => {
    const other = {
      family: "payment.new_subscription",
      priceRef: { entityKey: "pro_monthly", version: 2 },
      quantity: 1,
      trial: false
    }
    accepts(ExecutionRequest, operation(other))
    const decoded = Schema.decodeUnknownSync(Operation)(other)
    if (isExtendTrialOperation(decoded)) assert.fail("an other family is not extend_trial")
    else assert.strictEqual(decoded.quantity, 1)
    assert.isTrue(isExtendTrialOperation(Schema.decodeUnknownSync(Operation)(extendTrial)))
  })

  it("bounds an unknown family: name pattern, field names and at most 32 keys", () => {
    const keys = (count: number): Json =>
      Object.fromEntries([["family", "credit.grant"], ...Array.from({ length: count - 1 }, (_, i) => [`f${i}`, i])])
    accepts(ExecutionRequest, operation(keys(32)))
    rejects(ExecutionRequest, operation(keys(33)))
    rejects(ExecutionRequest, operation({ family: "Credit-Grant" }))
    rejects(ExecutionRequest, operation({ family: "" }))
    rejects(ExecutionRequest, operation({ family: "c".repeat(65) }))
    rejects(ExecutionRequest, operation({ family: "credit.grant", $where: "1" }))
    rejects(ExecutionRequest, operation({ amount: 5 }))
  })
})

// ---------------------------------------------------------------------------------------------
// Continuation and acknowledgement (the expiry check reads the Clock)
// ---------------------------------------------------------------------------------------------

const continuation: Json = {
  kind: "provider_payment_element",
  intent: "payment",
  clientSecret: "pi_3Example_secret_abc123",
  publishableKey: "pk_test_Example123",
  connectedAccountId: "acct_1Example0000",
  expiresAt: formatTimestamp(now + 30 * 60_000),
  allowRedirects: "never"
}

describe("PaymentContinuation", () => {
  const expiringAt = (epochMillis: number) => withField(continuation, ["expiresAt"], formatTimestamp(epochMillis))

  it("exports the one-hour window", () => assert.strictEqual(continuationWindowMillis, 3_600_000))

  it.effect("accepts a continuation expiring within the hour, platform-owned or connected", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(now)
      yield* acceptsEffect(PaymentContinuation, continuation)
      yield* acceptsEffect(PaymentContinuation, withField(continuation, ["connectedAccountId"], null))
      yield* acceptsEffect(PaymentContinuation, withField(continuation, ["intent"], "setup"))
    })
  )

  it.effect("expiry: past and exactly now rejected, now + 1 h accepted, now + 1 h + 1 ms rejected", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(now)
      yield* rejectsEffect(PaymentContinuation, expiringAt(now - 1_000), "expiresAt")
      yield* rejectsEffect(PaymentContinuation, expiringAt(now), "expiresAt")
      yield* acceptsEffect(PaymentContinuation, expiringAt(now + 1))
      yield* acceptsEffect(PaymentContinuation, expiringAt(now + continuationWindowMillis))
      yield* rejectsEffect(PaymentContinuation, expiringAt(now + continuationWindowMillis + 1), "expiresAt")
    })
  )

  it.effect("expiry is judged at the time of decoding, and offsets are honoured", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(now)
      const body = withField(continuation, ["expiresAt"], "2026-11-22T11:45:30.000+01:00") // now + 30 min
      yield* acceptsEffect(PaymentContinuation, body)
      yield* TestClock.adjust("30 minutes")
      yield* rejectsEffect(PaymentContinuation, body, "expiresAt")
    })
  )

  it.effect("rejects allowRedirects other than never", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(now)
      for (const value of ["always", "if_required", null, true]) {
        yield* rejectsEffect(PaymentContinuation, withField(continuation, ["allowRedirects"], value), "allowRedirects")
      }
    })
  )

  it.effect("rejects other invalid shapes", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(now)
      yield* rejectsEffect(PaymentContinuation, withField(continuation, ["paymentMethodTypes"], ["card"]))
      yield* rejectsEffect(PaymentContinuation, withField(continuation, ["kind"], "checkout_session"), "kind")
      yield* rejectsEffect(PaymentContinuation, withField(continuation, ["intent"], "subscription"), "intent")
      yield* rejectsEffect(
        PaymentContinuation,
        withField(continuation, ["clientSecret"], "s".repeat(513)),
        "clientSecret"
      )
      yield* rejectsEffect(PaymentContinuation, withField(continuation, ["publishableKey"], ""), "publishableKey")
      yield* rejectsEffect(PaymentContinuation, withField(continuation, ["connectedAccountId"], ""))
      yield* rejectsEffect(
        PaymentContinuation,
        withoutField(continuation, ["connectedAccountId"]),
        "connectedAccountId"
      )
      yield* rejectsEffect(PaymentContinuation, withField(continuation, ["expiresAt"], "soon"), "expiresAt")
    })
  )

  it("cannot be decoded synchronously: the expiry needs the Clock", () =>
    assert.isTrue(Either.isLeft(Schema.decodeUnknownEither(PaymentContinuation)(continuation))))
})

describe("Acknowledgement", () => {
  const accepted: Json = {
    type: "service.customer_action.ack",
    protocolVersion: 1,
    workspaceId,
    actionRequestId,
    providerIdempotencyKey,
    requestNonce: "req-nonce-0123456789abcdef",
    state: "accepted"
  }
  const rejected = withField(accepted, ["state"], "rejected")
  const acceptedWithContinuation = withField(
    withField(accepted, ["providerReference"], "pi_3Example"),
    ["continuation"],
    continuation
  )

  it.effect("accepts each state with and without its optional fields", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(now)
      yield* acceptsEffect(Acknowledgement, accepted)
      yield* acceptsEffect(Acknowledgement, acceptedWithContinuation)
      yield* acceptsEffect(Acknowledgement, rejected)
      yield* acceptsEffect(Acknowledgement, withField(rejected, ["errorCode"], "trial_not_found"))
      yield* acceptsEffect(Acknowledgement, withField(rejected, ["providerReference"], "ref_1"))
    })
  )

  it.effect("rejects errorCode with accepted", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(now)
      yield* rejectsEffect(Acknowledgement, withField(accepted, ["errorCode"], "oops"), "errorCode")
    })
  )

  it.effect("rejects a continuation with rejected", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(now)
      yield* rejectsEffect(Acknowledgement, withField(rejected, ["continuation"], continuation), "continuation")
    })
  )

  it.effect("rejects unknown fields, at top level and inside the continuation", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(now)
      yield* rejectsEffect(Acknowledgement, withField(accepted, ["extra"], 1), "extra")
      yield* rejectsEffect(Acknowledgement, withField(rejected, ["extra"], 1), "extra")
      yield* rejectsEffect(
        Acknowledgement,
        withField(acceptedWithContinuation, ["continuation", "extra"], 1),
        "continuation.extra"
      )
    })
  )

  it.effect("rejects an invalid continuation (expired, or redirects allowed)", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(now)
      yield* rejectsEffect(
        Acknowledgement,
        withField(acceptedWithContinuation, ["continuation", "expiresAt"], formatTimestamp(now)),
        "continuation.expiresAt"
      )
      yield* rejectsEffect(
        Acknowledgement,
        withField(acceptedWithContinuation, ["continuation", "allowRedirects"], "always"),
        "continuation.allowRedirects"
      )
    })
  )

  it.effect("rejects a wrong literal, wrong types, bounds, missing fields and explicit undefined", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(now)
      yield* rejectsEffect(Acknowledgement, withField(accepted, ["state"], "pending"))
      yield* rejectsEffect(Acknowledgement, withField(accepted, ["type"], "service.customer_action.completion"))
      yield* rejectsEffect(Acknowledgement, withField(accepted, ["protocolVersion"], "1"))
      yield* rejectsEffect(Acknowledgement, withField(rejected, ["errorCode"], "e".repeat(65)), "errorCode")
      yield* rejectsEffect(Acknowledgement, withField(rejected, ["errorCode"], "has spaces"), "errorCode")
      yield* rejectsEffect(Acknowledgement, withField(accepted, ["providerReference"], ""), "providerReference")
      yield* rejectsEffect(Acknowledgement, withoutField(accepted, ["requestNonce"]), "requestNonce")
      yield* rejectsEffect(Acknowledgement, withoutField(accepted, ["state"]))
      yield* rejectsEffect(Acknowledgement, withField(accepted, ["providerReference"], undefined), "providerReference")
      yield* rejectsEffect(Acknowledgement, withField(accepted, ["continuation"], undefined), "continuation")
      yield* rejectsEffect(Acknowledgement, withField(rejected, ["errorCode"], undefined), "errorCode")
    })
  )
})

// ---------------------------------------------------------------------------------------------
// Reconciliation
// ---------------------------------------------------------------------------------------------

describe("PaymentReconciliationRequest", () => {
  const request: Json = {
    type: "service.customer_action.payment_reconciliation",
    protocolVersion: 1,
    workspaceId,
    accountId: "acct_42",
    actionRequestId,
    actionVersionId: "5d4c3b2a-1908-4f7e-8d6c-5b4a39281706",
    offerVersionId: "bbbbbbbb-cccc-4ddd-8eee-ffffffffffff",
    mode: "one_time_purchase",
    providerIdempotencyKey,
    providerReferenceHash: hashA,
    requestNonce: "recon-nonce-0123456789",
    requestedAt: "2026-11-22T10:15:30.000Z",
    expected: { amountMinor: 4900, currency: "usd", priceReferenceHash: hashB }
  }
  const unpricedSetup = withField(
    withField(withField(request, ["mode"], "setup_only"), ["offerVersionId"], null),
    ["expected"],
    null
  )

  it("accepts a priced purchase, an unpriced setup and a setup bound to an offer", () => {
    accepts(PaymentReconciliationRequest, request)
    accepts(PaymentReconciliationRequest, unpricedSetup)
    accepts(PaymentReconciliationRequest, withField(request, ["mode"], "setup_only"))
    accepts(PaymentReconciliationRequest, withField(withField(request, ["mode"], "setup_only"), ["expected"], null))
    accepts(PaymentReconciliationRequest, withField(request, ["expected", "amountMinor"], 0))
  })

  it("rejects a missing price snapshot or offer unless the mode is setup_only", () => {
    rejects(PaymentReconciliationRequest, withField(request, ["expected"], null))
    rejects(PaymentReconciliationRequest, withField(request, ["offerVersionId"], null))
    rejects(PaymentReconciliationRequest, withField(unpricedSetup, ["mode"], "new_subscription"))
    rejects(PaymentReconciliationRequest, withField(unpricedSetup, ["expected"], request.expected))
  })

  it("rejects unknown fields at top level and inside expected", () => {
    rejects(PaymentReconciliationRequest, withField(request, ["providerReference"], "pi_raw"), "providerReference")
    rejects(PaymentReconciliationRequest, withField(request, ["expected", "tax"], 10), "expected.tax")
  })

  it("rejects a wrong literal, wrong types and bad terms", () => {
    rejects(PaymentReconciliationRequest, withField(request, ["type"], "service.customer_action.payment_observation"))
    rejects(PaymentReconciliationRequest, withField(request, ["mode"], "donation"), "mode")
    rejects(PaymentReconciliationRequest, withField(request, ["expected", "currency"], "USD"), "expected.currency")
    rejects(PaymentReconciliationRequest, withField(request, ["expected", "amountMinor"], -1), "expected.amountMinor")
    rejects(PaymentReconciliationRequest, withField(request, ["expected", "amountMinor"], 49.5), "expected.amountMinor")
    rejects(
      PaymentReconciliationRequest,
      withField(request, ["providerReferenceHash"], "pi_raw"),
      "providerReferenceHash"
    )
    rejects(PaymentReconciliationRequest, withField(request, ["accountId"], "a".repeat(257)), "accountId")
  })

  it("rejects missing fields", () => {
    rejects(PaymentReconciliationRequest, withoutField(request, ["requestedAt"]), "requestedAt")
    rejects(PaymentReconciliationRequest, withoutField(request, ["expected"]), "expected")
    rejects(PaymentReconciliationRequest, withoutField(request, ["expected", "priceReferenceHash"]))
  })
})

describe("PaymentObservation", () => {
  const observation: Json = {
    type: "service.customer_action.payment_observation",
    protocolVersion: 1,
    workspaceId,
    accountId: "acct_42",
    actionRequestId,
    actionVersionId: "5d4c3b2a-1908-4f7e-8d6c-5b4a39281706",
    offerVersionId: "bbbbbbbb-cccc-4ddd-8eee-ffffffffffff",
    mode: "one_time_purchase",
    providerIdempotencyKey,
    providerReferenceHash: hashA,
    requestNonce: "recon-nonce-0123456789",
    expected: { amountMinor: 4900, currency: "usd", priceReferenceHash: hashB },
    providerReference: "pi_3Example",
    eventId: "evt_1Example",
    eventSignatureVerified: true,
    stateReadAt: "2026-11-22T10:15:31.250Z",
    customerBound: true,
    intent: "payment",
    paymentStatus: "succeeded",
    subscriptionState: null,
    invoicePaid: null,
    methodAttached: true,
    chargedAmountMinor: 4900,
    refundedAmountMinor: 0,
    outcome: "succeeded"
  }
  const subscription = {
    ...observation,
    mode: "new_subscription",
    intent: "subscription",
    paymentStatus: null,
    subscriptionState: "trialing",
    invoicePaid: false,
    chargedAmountMinor: 0,
    outcome: "pending"
  }

  it("accepts a one-time purchase, a subscription and an unpriced setup observation", () => {
    accepts(PaymentObservation, observation)
    accepts(PaymentObservation, subscription)
    accepts(PaymentObservation, {
      ...observation,
      mode: "setup_only",
      offerVersionId: null,
      expected: null,
      eventId: null,
      intent: "setup",
      paymentStatus: null,
      chargedAmountMinor: 0
    })
    for (const outcome of ["failed", "reversed", "partially_reversed", "unknown"]) {
      accepts(PaymentObservation, withField(observation, ["outcome"], outcome))
    }
  })

  it("rejects an outcome outside the observation's set", () => {
    rejects(PaymentObservation, withField(observation, ["outcome"], "verified"), "outcome")
    rejects(PaymentObservation, withField(observation, ["outcome"], "accepted"), "outcome")
  })

  it("rejects unknown fields, including the request-only requestedAt", () => {
    rejects(PaymentObservation, withField(observation, ["requestedAt"], "2026-11-22T10:15:30.000Z"), "requestedAt")
    rejects(PaymentObservation, withField(observation, ["expected", "extra"], 1), "expected.extra")
  })

  it("rejects wrong types and values", () => {
    rejects(PaymentObservation, withField(observation, ["subscriptionState"], "expired"), "subscriptionState")
    rejects(PaymentObservation, withField(observation, ["intent"], "charge"), "intent")
    rejects(PaymentObservation, withField(observation, ["eventSignatureVerified"], "true"), "eventSignatureVerified")
    rejects(PaymentObservation, withField(observation, ["invoicePaid"], "yes"), "invoicePaid")
    rejects(PaymentObservation, withField(observation, ["chargedAmountMinor"], -1), "chargedAmountMinor")
    rejects(PaymentObservation, withField(observation, ["refundedAmountMinor"], 0.5), "refundedAmountMinor")
    rejects(PaymentObservation, withField(observation, ["stateReadAt"], "yesterday"), "stateReadAt")
    rejects(PaymentObservation, withField(observation, ["providerReference"], ""), "providerReference")
    rejects(PaymentObservation, withField(observation, ["expected"], null))
  })

  it("rejects a missing echo or reading", () => {
    rejects(PaymentObservation, withoutField(observation, ["requestNonce"]), "requestNonce")
    rejects(PaymentObservation, withoutField(observation, ["methodAttached"]), "methodAttached")
    rejects(PaymentObservation, withoutField(observation, ["eventId"]), "eventId")
  })
})

// ---------------------------------------------------------------------------------------------
// Completion
// ---------------------------------------------------------------------------------------------

describe("Completion", () => {
  const body = vectorBody("completion")
  const evidenceWith = (count: number): Json => ({
    ...(body.evidence as Json),
    ...Object.fromEntries(Array.from({ length: count }, (_, i) => [`field${i}`, i % 2 === 0 ? `v${i}` : i]))
  })

  it("accepts the conformance vector's body and every outcome", () => {
    accepts(Completion, body)
    for (const outcome of ["succeeded", "failed", "unknown", "reversed"]) {
      accepts(Completion, withField(body, ["outcome"], outcome))
    }
  })

  it("rejects outcome accepted and verified (never completion outcomes)", () => {
    rejects(Completion, withField(body, ["outcome"], "accepted"), "outcome")
    rejects(Completion, withField(body, ["outcome"], "verified"), "outcome")
  })

  it("accepts scalar evidence fields, up to 16 of them", () => {
    accepts(Completion, withField(body, ["evidence"], evidenceWith(16)))
    accepts(Completion, withField(body, ["evidence", "note"], null))
    accepts(Completion, withField(body, ["evidence", "granted"], true))
    accepts(Completion, withField(body, ["evidence", "entitlement"], ""))
    accepts(Completion, withField(body, ["evidence", "note"], "n".repeat(256)))
  })

  it("rejects 17 further evidence keys", () => rejects(Completion, withField(body, ["evidence"], evidenceWith(17))))

  it("rejects nested objects and arrays in evidence", () => {
    rejects(Completion, withField(body, ["evidence", "detail"], { plan: "pro" }), "evidence.detail")
    rejects(Completion, withField(body, ["evidence", "detail"], ["pro"]), "evidence.detail")
  })

  it("rejects out-of-bounds evidence", () => {
    rejects(Completion, withField(body, ["evidence", "note"], "n".repeat(257)), "evidence.note")
    rejects(Completion, withField(body, ["evidence", "ratio"], Number.POSITIVE_INFINITY), "evidence.ratio")
    rejects(Completion, withField(body, ["evidence", "bad key"], 1))
    rejects(Completion, withField(body, ["evidence", "entitlement"], "e".repeat(129)), "evidence.entitlement")
    rejects(Completion, withField(body, ["evidence", "reasonCode"], ""), "evidence.reasonCode")
    rejects(Completion, withField(body, ["evidence", "source"], 7), "evidence.source")
    rejects(Completion, withoutField(body, ["evidence", "reasonCode"]), "evidence.reasonCode")
    rejects(Completion, withField(body, ["evidence", "note"], undefined))
  })

  it("rejects unknown top-level fields, wrong literals and types, bad ids and missing fields", () => {
    rejects(Completion, withField(body, ["extra"], 1), "extra")
    rejects(Completion, withField(body, ["type"], "service.customer_action.ack"), "type")
    rejects(Completion, withField(body, ["completionId"], "cmp 0001"), "completionId")
    rejects(Completion, withField(body, ["completionId"], "c".repeat(129)), "completionId")
    rejects(Completion, withField(body, ["completedAt"], 1_790_000_000_000), "completedAt")
    rejects(Completion, withField(body, ["providerReference"], ""), "providerReference")
    rejects(Completion, withoutField(body, ["evidence"]), "evidence")
    rejects(Completion, withoutField(body, ["completionId"]), "completionId")
    accepts(Completion, withField(body, ["completionId"], "c".repeat(128)))
  })

  it("Evidence has the same bounds on its own", () => {
    accepts(Evidence, evidenceWith(16))
    rejects(Evidence, evidenceWith(17))
  })

  it("CatalogEvidenceType lists exactly the spec's eight types", () => {
    assert.deepStrictEqual(CatalogEvidenceType.literals, [
      "authenticated_completion",
      "provider_event",
      "customer_server_event",
      "billing_change",
      "subscription_state",
      "entitlement_state",
      "credit_balance",
      "approval_recorded"
    ])
    rejects(CatalogEvidenceType, "completion")
  })
})

// ---------------------------------------------------------------------------------------------
// Approval
// ---------------------------------------------------------------------------------------------

describe("ApprovalPrepareResponse", () => {
  const response: Json = {
    reviewProjection: {
      action: { key: "upgrade_to_pro", label: "Upgrade to Pro", confirmation: "Upgrade this workspace to Pro" },
      operation: {
        family: "payment.existing_subscription_change",
        amountMinor: 4900,
        currency: "usd",
        interval: "month",
        proration: "create_prorations"
      },
      offer: {
        offerId: "bbbbbbbb-cccc-4ddd-8eee-ffffffffffff",
        label: "Pro monthly",
        priceDisplay: "$49.00 / month",
        termsDisplay: "Billed monthly, cancel anytime"
      },
      timing: {
        effectiveAt: "2026-11-22T10:15:30.000Z",
        prorationDisplay: "$24.50 today",
        prorationAmountMinor: 2450
      },
      requester: { roleKey: "member" },
      approvalExpiresAt: "2026-11-29T10:15:30.000Z",
      dependencyHash: hashA
    },
    revision: 3,
    reviewValidUntil: "2026-11-22T10:30:30.000Z",
    projectionHash: hashB
  }
  const minimal: Json = {
    ...response,
    reviewProjection: {
      action: { key: "extend_trial_14d", label: "Extend trial", confirmation: "Extend your trial by 14 days" },
      operation: { family: "extend_trial", extensionDays: 14, target: "subscription sub_1 (version 3)" },
      timing: { effectiveAt: "2026-11-22T10:15:30.000Z" },
      requester: { roleKey: "member" },
      approvalExpiresAt: "2026-11-29T10:15:30.000Z",
      dependencyHash: hashA
    }
  }

  it("accepts a priced review and one without offer or proration", () => {
    accepts(ApprovalPrepareResponse, response)
    accepts(ApprovalPrepareResponse, minimal)
    accepts(ApprovalPrepareResponse, withField(response, ["reviewProjection", "timing", "prorationAmountMinor"], -1200))
    accepts(ApprovalPrepareResponse, withField(response, ["reviewValidUntil"], "2026-11-29T10:15:30.000Z"))
  })

  it("never carries an approval token or a mutation payload", () => {
    rejects(ApprovalPrepareResponse, withField(response, ["approvalToken"], "tok_secret"), "approvalToken")
    // The operation is shown by its key fields only, never as the raw operation (its trialRef, its priceKey).
    rejects(
      ApprovalPrepareResponse,
      withField(response, ["reviewProjection", "operation", "trialRef"], { entityKey: "sub_1" })
    )
    rejects(ApprovalPrepareResponse, withField(response, ["reviewProjection", "operation", "priceKey"], "addon"))
    rejects(ApprovalPrepareResponse, withField(response, ["reviewProjection", "operation"], undefined))
    rejects(ApprovalPrepareResponse, withField(response, ["reviewProjection", "action", "operation"], {}))
    rejects(ApprovalPrepareResponse, withField(response, ["reviewProjection", "offer", "priceId"], "price_1"))
    rejects(ReviewProjection, withField(response.reviewProjection as Json, ["approvalToken"], "t"), "approvalToken")
  })

  it("rejects a review valid beyond the approval expiry", () =>
    rejects(ApprovalPrepareResponse, withField(response, ["reviewValidUntil"], "2026-11-29T10:15:30.001Z")))

  it("rejects wrong types, bounds and hashes", () => {
    rejects(ApprovalPrepareResponse, withField(response, ["revision"], -1), "revision")
    rejects(ApprovalPrepareResponse, withField(response, ["revision"], "3"), "revision")
    rejects(ApprovalPrepareResponse, withField(response, ["projectionHash"], hashB.toUpperCase()), "projectionHash")
    rejects(ApprovalPrepareResponse, withField(response, ["reviewProjection", "offer", "label"], "l".repeat(201)))
    rejects(ApprovalPrepareResponse, withField(response, ["reviewProjection", "offer", "priceDisplay"], ""))
    rejects(ApprovalPrepareResponse, withField(response, ["reviewProjection", "offer", "offerId"], "offer_1"))
    rejects(ApprovalPrepareResponse, withField(response, ["reviewProjection", "timing", "prorationAmountMinor"], 1.5))
    rejects(ApprovalPrepareResponse, withField(response, ["reviewProjection", "requester", "roleKey"], ""))
  })

  it("rejects an explicit undefined for optional fields", () => {
    rejects(ApprovalPrepareResponse, withField(response, ["reviewProjection", "offer"], undefined))
    rejects(ApprovalPrepareResponse, withField(response, ["reviewProjection", "offer", "priceDisplay"], undefined))
    rejects(ApprovalPrepareResponse, withField(response, ["reviewProjection", "timing", "prorationDisplay"], undefined))
  })

  it("rejects missing fields", () => {
    rejects(ApprovalPrepareResponse, withoutField(response, ["projectionHash"]), "projectionHash")
    rejects(ApprovalPrepareResponse, withoutField(response, ["reviewProjection", "dependencyHash"]))
    rejects(ApprovalPrepareResponse, withoutField(response, ["reviewProjection", "timing", "effectiveAt"]))
  })
})

// ---------------------------------------------------------------------------------------------
// Message types
// ---------------------------------------------------------------------------------------------

describe("MessageType", () => {
  it("lists the seven body types, once each", () => {
    assert.deepStrictEqual(MessageType.literals, [
      "service.customer_action.handshake",
      "service.customer_action.handshake_ack",
      "service.customer_action.execute",
      "service.customer_action.ack",
      "service.customer_action.payment_reconciliation",
      "service.customer_action.payment_observation",
      "service.customer_action.completion"
    ])
    rejects(MessageType, "service.customer_action.unknown")
  })
})
