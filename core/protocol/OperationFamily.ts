/**
 * The operation families (spec "Execution request body": "`action.operation`: object with a `family`
 * string plus family-specific fields"; "Payment continuation rules" 2: "Operation keys allowed:
 * `payment.existing_subscription_change`, `payment.new_subscription`, `payment.one_time_purchase`,
 * `payment.setup_only`, `recover_payment`. Each requires its matching workspace capability").
 *
 * One table says, per family, whether it is a Payment action and, for one that is: the capability
 * mode it requires, whether it carries an exact price, which continuation intents it may mount, and
 * how a reconciliation read of it is judged (the provider objects the read may name, whether the
 * charge must equal the snapshotted amount). The catalog, the intake and delivery gates, the
 * judgement of observations and the customer kit all read this table; a family absent from it is
 * refused (`UnknownOperationFamily`, or a decode failure of `OperationFamily`), never classified by
 * guess.
 */
import * as Data from "effect/Data"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import type { ObservedIntent, PaymentMode } from "./messages/Common.ts"
import type { PaymentContinuation } from "./messages/Continuation.ts"

/** A continuation's `intent`: "`payment` (client secret of a payment intent) or `setup`". */
export type ContinuationIntent = PaymentContinuation["intent"]

/**
 * What a Payment family is: its capability mode and the rules that follow from it.
 */
export interface PaymentRule {
  /** The capability mode it requires ("Each requires its matching workspace capability"). */
  readonly mode: PaymentMode
  /**
   * Whether it is bound to an offer with an exact price, snapshotted as the expected terms: every
   * mode but setup ("A non-purchase setup has no priced offer").
   */
  readonly priced: boolean
  /**
   * The continuation intents it may mount (spec "Payment continuation object" `intent`): a setup
   * saves a method (a setup intent), a one-time purchase charges (a payment intent); subscriptions
   * and recoveries may need either (a trial or a zero first invoice mounts a setup intent).
   */
  readonly continuationIntents: ReadonlyArray<ContinuationIntent>
  /** How a reconciliation read of it is judged (spec "Payment verification rules for the observation"). */
  readonly read: {
    /**
     * The provider objects its observation may be read from; the first is the one it is read from
     * when the reader knows nothing else (an `unknown` reading).
     */
    readonly intents: readonly [ObservedIntent, ...Array<ObservedIntent>]
    /**
     * Whether the charge must equal the snapshotted amount ("A one-time purchase requires a
     * successful charge equal to the fixed amount and currency"; a recovery pays a fixed amount too).
     */
    readonly fixedAmount: boolean
  }
}

/**
 * One family's row: `payment` is `undefined` for a family that is not a Payment action.
 */
export interface FamilyRule {
  readonly payment: PaymentRule | undefined
}

/**
 * The families, in the order the catalog and the reference name them.
 */
export const operationFamilies = [
  "extend_trial",
  "payment.existing_subscription_change",
  "payment.new_subscription",
  "payment.one_time_purchase",
  "payment.setup_only",
  "recover_payment"
] as const

export type OperationFamily = (typeof operationFamilies)[number]

/**
 * A family of the table; anything else fails to decode.
 */
export const OperationFamily: Schema.Literal<typeof operationFamilies> = Schema.Literal(...operationFamilies)

const either = ["payment", "setup"] as const

/**
 * The table's rows. They are read through `table`, a record without a prototype, so that a family
 * named like an `Object.prototype` member (`constructor`, `__proto__`) is absent, never inherited.
 */
const rows = {
  extend_trial: { payment: undefined },
  "payment.existing_subscription_change": {
    payment: {
      mode: "existing_subscription_change",
      priced: true,
      continuationIntents: either,
      read: { intents: ["subscription"], fixedAmount: false }
    }
  },
  "payment.new_subscription": {
    payment: {
      mode: "new_subscription",
      priced: true,
      continuationIntents: either,
      read: { intents: ["subscription"], fixedAmount: false }
    }
  },
  "payment.one_time_purchase": {
    payment: {
      mode: "one_time_purchase",
      priced: true,
      continuationIntents: ["payment"],
      read: { intents: ["payment"], fixedAmount: true }
    }
  },
  "payment.setup_only": {
    payment: {
      mode: "setup_only",
      priced: false,
      continuationIntents: ["setup"],
      read: { intents: ["setup"], fixedAmount: false }
    }
  },
  // A recovery pays a fixed amount, read from the payment first; the invoice it settles is read
  // through its subscription.
  recover_payment: {
    payment: {
      mode: "recover_payment",
      priced: true,
      continuationIntents: either,
      read: { intents: ["payment", "subscription"], fixedAmount: true }
    }
  }
} as const satisfies { readonly [F in OperationFamily]: FamilyRule }

/** The modes the rows name (`paymentRule` takes only these: a mode without a family is a type error). */
type RowModes = (typeof rows)[OperationFamily] extends infer Row
  ? Row extends { readonly payment: { readonly mode: infer Mode } }
    ? Mode
    : never
  : never

const table: { readonly [F in OperationFamily]: FamilyRule } = Object.assign(
  Object.create(null) as { [F in OperationFamily]: FamilyRule },
  rows
)

/**
 * A family absent from the table: refused wherever a family is classified.
 */
export class UnknownOperationFamily extends Data.TaggedError("UnknownOperationFamily")<{
  readonly family: string
}> {}

/**
 * Whether `family` is a family of the table.
 */
export const isOperationFamily = (family: string): family is OperationFamily => Object.hasOwn(table, family)

/**
 * The row of a family of the table.
 */
export const ruleOf = (family: OperationFamily): FamilyRule => table[family]

/**
 * The row of `family`; a family absent from the table is `UnknownOperationFamily`.
 */
export const familyRule = (family: string): Either.Either<FamilyRule, UnknownOperationFamily> =>
  isOperationFamily(family) ? Either.right(table[family]) : Either.left(new UnknownOperationFamily({ family }))

/**
 * The Payment families, each with its rule and family.
 */
export const paymentFamilies: ReadonlyArray<PaymentRule & { readonly family: OperationFamily }> =
  operationFamilies.flatMap((family) => {
    const payment = table[family].payment
    return payment === undefined ? [] : [{ ...payment, family }]
  })

const byMode = new Map(paymentFamilies.map((rule) => [rule.mode, rule]))

/**
 * The rule of a payment mode. Every mode has a family (`RowModes`), exactly one (the table test
 * holds it to that).
 */
export const paymentRule = (mode: PaymentMode & RowModes): PaymentRule & { readonly family: OperationFamily } =>
  byMode.get(mode)!
