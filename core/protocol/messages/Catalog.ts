/**
 * The catalog document a workspace publishes (`PUT /catalog`) and every action binds to
 * (`binding.publishedVersionId`): its offers with their exact prices, its actions with their operation
 * family, evidence types and frequency policy, and its decisions. These are the shapes only; the
 * reference rules over a document (`validateCatalog`) are the catalog domain's.
 */
import * as Schema from "effect/Schema"
import { OperationFamily } from "../OperationFamily.ts"
import { Uuid } from "../Uuid.ts"
import { CatalogEvidenceType } from "./Completion.ts"
import { DisplayLabel, Timestamp } from "./Common.ts"
import { SafeTerms } from "./Execution.ts"
import { Currency } from "./Reconciliation.ts"

const ExactStruct = <Fields extends Schema.Struct.Fields>(fields: Fields) =>
  Schema.Struct(fields).annotations({ parseOptions: { onExcessProperty: "error" } })

const Key = Schema.String.pipe(
  Schema.pattern(/^[a-z][a-z0-9_.:-]{0,127}$/),
  Schema.annotations({
    message: () => "must be 1 to 128 characters: lowercase letters, digits, _ . : - (starting with a letter)"
  })
)

/** The ISO 4217 codes this runtime's `Intl` knows, lower-cased; `undefined` where it cannot list them. */
const isoCurrencies: ReadonlySet<string> | undefined = (() => {
  const list = (Intl as { supportedValuesOf?: (key: string) => ReadonlyArray<string> }).supportedValuesOf
  return list === undefined ? undefined : new Set(list("currency").map((code) => code.toLowerCase()))
})()

/** Whether a three-letter code is an ISO 4217 currency (any such code where `Intl` cannot list them). */
const isIsoCurrency = (code: string): boolean => isoCurrencies === undefined || isoCurrencies.has(code)

/**
 * An exact price: integer minor units, never negative, and a lowercase ISO 4217 currency code.
 */
export const Price = ExactStruct({
  amountMinor: Schema.Int.pipe(
    Schema.between(0, Number.MAX_SAFE_INTEGER),
    // -0 passes `between(0, …)` but is no amount a price is written with
    Schema.filter((n) => !Object.is(n, -0)),
    Schema.annotations({ message: () => "must be a non-negative integer (minor units)" })
  ),
  currency: Currency.pipe(
    Schema.filter(isIsoCurrency),
    Schema.annotations({ message: () => "must be a lowercase ISO 4217 code such as usd" })
  )
})

/** A catalog offer: its ids, the price (or none) and the label a reviewing billing owner sees. */
export const Offer = ExactStruct({
  offerId: Uuid,
  offerVersionId: Uuid,
  price: Schema.NullOr(Price),
  /** How the offer is named to a billing owner reviewing an approval (optional). */
  label: Schema.optionalWith(DisplayLabel, { exact: true })
})

/** {@inheritDoc Offer:var} */
export interface Offer extends Schema.Schema.Type<typeof Offer> {}

/**
 * At most `limit` actions of this catalog action per account within `windowSeconds`.
 */
export const Frequency = ExactStruct({
  limit: Schema.Int.pipe(Schema.between(1, 1_000_000)),
  windowSeconds: Schema.Int.pipe(Schema.between(1, 10 * 366 * 24 * 3600))
})

/**
 * The fixed parameters of a catalog action's operation: what runs, defined on the server. The
 * extend-trial family's `extensionDays`; a Payment family's billing `interval`, `proration` and the
 * customer's `priceKey` (its amount and currency are the offer's price). The account-specific part
 * (the extend-trial `trialRef`) is never here: it comes from the runtime session.
 */
export const CatalogOperation = ExactStruct({
  extensionDays: Schema.optionalWith(
    Schema.Int.pipe(
      Schema.between(1, 365),
      Schema.annotations({ message: () => "must be an integer from 1 to 365 (days)" })
    ),
    { exact: true }
  ),
  interval: Schema.optionalWith(Schema.Literal("day", "week", "month", "year"), { exact: true }),
  proration: Schema.optionalWith(Schema.Literal("create_prorations", "always_invoice", "none"), { exact: true }),
  priceKey: Schema.optionalWith(Key, { exact: true })
}).annotations({ identifier: "CatalogOperation" })

/** {@inheritDoc CatalogOperation:var} */
export interface CatalogOperation extends Schema.Schema.Type<typeof CatalogOperation> {}

/**
 * A catalog action: its ids, key and family, safe terms, fixed operation parameters, offer, the
 * evidence that verifies it and its frequency limit.
 */
export const CatalogAction = ExactStruct({
  actionId: Uuid,
  actionVersionId: Uuid,
  key: Key,
  family: OperationFamily,
  /**
   * The display strings the customer and the billing owner see (`action.safeTerms`). An action
   * without them can be sent by a trusted server (`POST /action-requests`) but not asked for from
   * the embedded runtime.
   */
  safeTerms: Schema.optionalWith(SafeTerms, { exact: true }),
  /** The operation's fixed parameters; every action taken must carry exactly these. */
  operation: Schema.optionalWith(CatalogOperation, { exact: true }),
  offerId: Schema.optionalWith(Uuid, { exact: true }),
  evidence: Schema.NonEmptyArray(CatalogEvidenceType),
  frequency: Schema.optionalWith(Frequency, { exact: true })
})

/** {@inheritDoc CatalogAction:var} */
export interface CatalogAction extends Schema.Schema.Type<typeof CatalogAction> {}

/**
 * A catalog decision: the journey it belongs to, the actions and offers it may take, until when,
 * and for which account statuses.
 */
export const Decision = ExactStruct({
  decisionId: Uuid,
  journeyId: Uuid,
  actionIds: Schema.NonEmptyArray(Uuid),
  offerIds: Schema.Array(Uuid),
  validUntil: Schema.optionalWith(Timestamp, { exact: true }),
  accountStatuses: Schema.optionalWith(Schema.NonEmptyArray(Key), { exact: true })
})

/** {@inheritDoc Decision:var} */
export interface Decision extends Schema.Schema.Type<typeof Decision> {}

/**
 * The document `PUT /catalog` takes.
 */
export const CatalogDocument = ExactStruct({
  /** The id actions bind to (`binding.publishedVersionId`); assigned by the service when absent. */
  publishedVersionId: Schema.optionalWith(Uuid, { exact: true }),
  offers: Schema.Array(Offer).pipe(Schema.maxItems(1000)),
  actions: Schema.NonEmptyArray(CatalogAction).pipe(Schema.maxItems(1000)),
  decisions: Schema.NonEmptyArray(Decision).pipe(Schema.maxItems(1000))
}).annotations({ identifier: "CatalogDocument" })

/** {@inheritDoc CatalogDocument:var} */
export interface CatalogDocument extends Schema.Schema.Type<typeof CatalogDocument> {}
