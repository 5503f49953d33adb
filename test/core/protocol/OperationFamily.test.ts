/**
 * The operation family table: every family classified (a Payment family or not), every payment mode
 * with exactly one family and its intents, a family absent from the table refused (never guessed),
 * and every reader of the table agreeing with it: the catalog's Payment rules and the intent a
 * reading that knows nothing names (`recover_payment`: its payment).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as FastCheck from "effect/FastCheck"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { validateCatalog } from "../../../core/catalog/Catalog.ts"
import type { CatalogDocument } from "../../../core/protocol/messages/Catalog.ts"
import { makePaymentReader } from "../../../core/customer/Payments.ts"
import type { PaymentProviderService } from "../../../core/customer/PaymentProvider.ts"
import { makeMemory, unknownReadingIntent } from "../../../core/customer/Reconciliation.ts"
import type { ClaimedExecution } from "../../../core/customer/ClaimedExecution.ts"
import type { ActionLedgerService } from "../../../core/ports/ActionLedger.ts"
import { ObservedIntent, PaymentMode } from "../../../core/protocol/messages/Common.ts"
import { ContinuationIntent } from "../../../core/protocol/messages/Continuation.ts"
import type { PaymentReconciliationRequest } from "../../../core/protocol/messages/Reconciliation.ts"
import {
  familyRule,
  isOperationFamily,
  OperationFamily,
  operationFamilies,
  paymentFamilies,
  paymentRule,
  ruleOf,
  UnknownOperationFamily
} from "../../../core/protocol/OperationFamily.ts"

const modes = PaymentMode.literals

describe("the operation family table", () => {
  it("classifies every family: extend_trial is not a payment, the five payment operation keys are", () => {
    const classified = operationFamilies.map((family) => [family, ruleOf(family).payment?.mode ?? null] as const)
    assert.deepStrictEqual(classified, [
      ["extend_trial", null],
      ["payment.existing_subscription_change", "existing_subscription_change"],
      ["payment.new_subscription", "new_subscription"],
      ["payment.one_time_purchase", "one_time_purchase"],
      ["payment.setup_only", "setup_only"],
      ["recover_payment", "recover_payment"]
    ])
    for (const family of operationFamilies) {
      assert.isTrue(isOperationFamily(family), family)
      assert.deepStrictEqual(familyRule(family), Either.right(ruleOf(family)), family)
      assert.isTrue(Either.isRight(Schema.decodeUnknownEither(OperationFamily)(family)), family)
    }
  })

  it("gives every payment mode exactly one family, and intents of the protocol's vocabularies", () => {
    assert.sameMembers(
      paymentFamilies.map((rule) => rule.mode),
      [...modes]
    )
    for (const mode of modes) {
      const rule = paymentRule(mode)
      assert.strictEqual(rule.mode, mode)
      assert.strictEqual(ruleOf(rule.family).payment?.mode, mode, mode)
      assert.isAbove(rule.continuationIntents.length, 0, mode)
      for (const intent of rule.continuationIntents) assert.include(ContinuationIntent.literals, intent, mode)
      for (const intent of rule.read.intents) assert.include(ObservedIntent.literals, intent, mode)
    }
  })

  it("pins each mode's intents: what a continuation may mount, what a read may name and is read from first", () => {
    const table = modes.map((mode) => {
      const rule = paymentRule(mode)
      return [mode, rule.priced, rule.continuationIntents, rule.read.intents, rule.read.fixedAmount] as const
    })
    assert.deepStrictEqual(table, [
      ["existing_subscription_change", true, ["payment", "setup"], ["subscription"], false],
      ["new_subscription", true, ["payment", "setup"], ["subscription"], false],
      ["one_time_purchase", true, ["payment"], ["payment"], true],
      ["setup_only", false, ["setup"], ["setup"], false],
      ["recover_payment", true, ["payment", "setup"], ["payment", "subscription"], true]
    ])
  })

  it("refuses a family named like an Object.prototype member", () => {
    for (const family of ["constructor", "__proto__", "toString", "hasOwnProperty"]) {
      assert.isFalse(isOperationFamily(family), family)
      assert.deepStrictEqual(familyRule(family), Either.left(new UnknownOperationFamily({ family })), family)
    }
  })

  it.prop(
    "refuses any family absent from the table: a typed error and a decode failure",
    [FastCheck.oneof(FastCheck.string(), FastCheck.stringMatching(/^[a-z][a-z0-9_.]{0,63}$/))],
    ([family]) => {
      FastCheck.pre(!(operationFamilies as ReadonlyArray<string>).includes(family))
      assert.deepStrictEqual(familyRule(family), Either.left(new UnknownOperationFamily({ family })))
      assert.isTrue(Either.isLeft(Schema.decodeUnknownEither(OperationFamily)(family)))
    }
  )
})

describe("the catalog reads the table", () => {
  const offerId = "4f6b8c0d-2e3a-4c5d-9f7b-9a1c3d5e7f9b"
  const document = (family: CatalogDocument["actions"][number]["family"], priced: boolean): CatalogDocument => ({
    offers: [
      {
        offerId,
        offerVersionId: "5a7c9e1f-3b4d-4e6f-8a0b-1c2d3e4f5a6b",
        price: priced ? { amountMinor: 1_000, currency: "usd" } : null
      }
    ],
    actions: [
      {
        actionId: "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b",
        actionVersionId: "7a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d",
        key: "the_action",
        family,
        offerId,
        evidence: ["provider_event"]
      }
    ],
    decisions: [
      {
        decisionId: "2d4f6a8b-0c1e-4a3b-9d5f-7e9a1b3c5d7f",
        journeyId: "3e5a7b9c-1d2f-4b4c-8e6a-8f0b2c4d6e8a",
        actionIds: ["6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b"],
        offerIds: [offerId]
      }
    ]
  })

  it("read-back evidence only for a Payment family; a priced offer exactly when the family is priced", () => {
    for (const family of operationFamilies) {
      const payment = ruleOf(family).payment
      for (const priced of [true, false]) {
        const paths = validateCatalog(document(family, priced)).map((issue) => issue.path)
        const expected = [
          ...(payment !== undefined && payment.priced !== priced ? ["actions.0.offerId"] : []),
          ...(payment === undefined ? ["actions.0.evidence.0"] : [])
        ]
        assert.deepStrictEqual(paths, expected, `${family}, priced ${priced}`)
      }
    }
  })
})

describe("a reading that knows nothing names the mode's first provider object", () => {
  const request = (mode: PaymentReconciliationRequest["mode"]) =>
    ({ mode, providerIdempotencyKey: `pva_${"a".repeat(64)}` }) as PaymentReconciliationRequest
  const execution = {} as ClaimedExecution

  it.effect("recover_payment is read from its payment (the fixed amount it charges), by every reader", () =>
    Effect.gen(function* () {
      assert.strictEqual(unknownReadingIntent("recover_payment"), "payment")
      const ledger = { getByIdempotencyKey: () => Effect.succeed(Option.none()) } as unknown as ActionLedgerService
      const kit = makePaymentReader({ provider: {} as PaymentProviderService, ledger })
      const failing = makePaymentReader({
        provider: {} as PaymentProviderService,
        ledger: { getByIdempotencyKey: () => Effect.fail(new Error("unreadable")) } as unknown as ActionLedgerService
      })
      const memory = makeMemory()
      for (const mode of modes) {
        const expected = paymentRule(mode).read.intents[0]
        assert.strictEqual(unknownReadingIntent(mode), expected, mode)
        for (const reader of [kit, failing, memory]) {
          const reading = yield* reader.read({ request: request(mode), execution })
          assert.strictEqual(reading.intent, expected, mode)
          assert.strictEqual(reading.outcome, "unknown", mode)
        }
      }
    })
  )
})
