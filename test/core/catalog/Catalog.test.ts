/**
 * The catalog document alone (bad input): the schema refuses a negative or
 * fractional amount, a currency not a lowercase ISO 4217 code, an unknown operation family and any
 * excess property; `validateCatalog` names, by JSON path, every id that repeats and every reference
 * that resolves to nothing, and the Payment rules (a priced offer, none for `setup_only`, never
 * `authenticated_completion`). One test per rejection reason; the fixture catalog is sound.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { definedAction, termsMismatch, validateCatalog } from "../../../core/catalog/Catalog.ts"
import { CatalogDocument } from "../../../core/protocol/messages/Catalog.ts"
import { fixtureActionIds, fixtureCatalog, fixtureTrialRef, intakeInput } from "../../support/deliveries.ts"

type Json = Record<string, any>

/** The fixture catalog as plain JSON, to change one thing in. */
const fixture = (): Json => JSON.parse(JSON.stringify(fixtureCatalog))

const decode = Schema.decodeUnknownEither(CatalogDocument)

/** Decodes `document` and answers the paths of its schema issues (empty when it decodes). */
const schemaIssues = (document: unknown): ReadonlyArray<string> =>
  Either.match(decode(document), {
    onRight: () => [],
    // A union reports once per member (a literal list: the same path again; a nullable price: also
    // the price itself, for the null member): the deepest paths, once each.
    onLeft: (error) => {
      const paths = [...new Set(ParseResult.ArrayFormatter.formatErrorSync(error).map((issue) => issue.path.join(".")))]
      return paths.filter((path) => !paths.some((other) => other.startsWith(path + ".")))
    }
  })

/** Decodes `document` (it must decode) and answers the paths `validateCatalog` names. */
const referenceIssues = (document: unknown): ReadonlyArray<string> => {
  const decoded = decode(document)
  assert.isTrue(Either.isRight(decoded), `the document must pass the schema: ${JSON.stringify(schemaIssues(document))}`)
  return validateCatalog((decoded as Either.Right<never, CatalogDocument>).right).map((issue) => issue.path)
}

const otherUuid = "9f8e7d6c-5b4a-4c3d-8e2f-1a0b9c8d7e6f"
const trialIndex = 0
const oneTimeIndex = (): number => fixture().actions.findIndex((a: Json) => a.family === "payment.one_time_purchase")
const setupIndex = (): number => fixture().actions.findIndex((a: Json) => a.family === "payment.setup_only")

describe("the fixture catalog", () => {
  it("passes the schema and has no reference issue", () => {
    assert.deepStrictEqual(schemaIssues(fixture()), [])
    assert.deepStrictEqual(referenceIssues(fixture()), [])
  })
})

describe("validateCatalog: one test per reason, each naming the field", () => {
  it("a duplicate offerId", () => {
    const doc = fixture()
    doc.offers.push({ ...doc.offers[0], offerVersionId: otherUuid })
    assert.deepStrictEqual(referenceIssues(doc), ["offers.1.offerId"])
  })

  it("a duplicate actionId", () => {
    const doc = fixture()
    doc.actions.push({ ...doc.actions[trialIndex], key: "extend_trial_again" })
    assert.deepStrictEqual(referenceIssues(doc), [`actions.${doc.actions.length - 1}.actionId`])
  })

  it("a duplicate action key", () => {
    const doc = fixture()
    doc.actions.push({ ...doc.actions[trialIndex], actionId: otherUuid })
    assert.deepStrictEqual(referenceIssues(doc), [`actions.${doc.actions.length - 1}.key`])
  })

  it("a duplicate decisionId", () => {
    const doc = fixture()
    doc.decisions.push({ ...doc.decisions[0] })
    assert.deepStrictEqual(referenceIssues(doc), ["decisions.1.decisionId"])
  })

  it("a decision's actionIds naming no action", () => {
    const doc = fixture()
    doc.decisions[0].actionIds.push(otherUuid)
    assert.deepStrictEqual(referenceIssues(doc), [`decisions.0.actionIds.${doc.decisions[0].actionIds.length - 1}`])
  })

  it("a decision's offerIds naming no offer", () => {
    const doc = fixture()
    doc.decisions[0].offerIds.push(otherUuid)
    assert.deepStrictEqual(referenceIssues(doc), ["decisions.0.offerIds.1"])
  })

  it("an action's offerId naming no offer", () => {
    const doc = fixture()
    doc.actions[trialIndex].offerId = otherUuid
    assert.deepStrictEqual(referenceIssues(doc), [`actions.${trialIndex}.offerId`])
  })

  it("a Payment action without an offer", () => {
    const doc = fixture()
    delete doc.actions[oneTimeIndex()].offerId
    assert.deepStrictEqual(referenceIssues(doc), [`actions.${oneTimeIndex()}.offerId`])
  })

  it("a Payment action whose offer has no price", () => {
    const doc = fixture()
    doc.offers.push({ offerId: otherUuid, offerVersionId: otherUuid, price: null })
    doc.actions[oneTimeIndex()].offerId = otherUuid
    assert.deepStrictEqual(referenceIssues(doc), [`actions.${oneTimeIndex()}.offerId`])
  })

  it("a setup_only action with a priced offer", () => {
    const doc = fixture()
    doc.actions[setupIndex()].offerId = doc.offers[0].offerId
    assert.deepStrictEqual(referenceIssues(doc), [`actions.${setupIndex()}.offerId`])
  })

  it("a setup_only action with an unpriced offer is sound", () => {
    const doc = fixture()
    doc.offers.push({ offerId: otherUuid, offerVersionId: otherUuid, price: null })
    doc.actions[setupIndex()].offerId = otherUuid
    assert.deepStrictEqual(referenceIssues(doc), [])
  })

  it("authenticated_completion as evidence of a Payment action", () => {
    const doc = fixture()
    doc.actions[oneTimeIndex()].evidence = ["provider_event", "authenticated_completion"]
    assert.deepStrictEqual(referenceIssues(doc), [`actions.${oneTimeIndex()}.evidence.1`])
  })

  it("customer-asserted evidence (entitlement_state) on a Payment action", () => {
    const doc = fixture()
    doc.actions[oneTimeIndex()].evidence = ["entitlement_state"]
    assert.deepStrictEqual(referenceIssues(doc), [`actions.${oneTimeIndex()}.evidence.0`])
  })

  it("at publishing, a decision already past its validUntil", () => {
    const doc = fixture()
    doc.decisions[0].validUntil = "1970-01-02T00:00:00Z"
    const decoded = decode(doc)
    assert.isTrue(Either.isRight(decoded))
    const document = (decoded as Either.Right<never, CatalogDocument>).right
    assert.deepStrictEqual(
      validateCatalog(document, Date.parse("2026-01-01T00:00:00Z")).map((issue) => issue.path),
      ["decisions.0.validUntil"]
    )
    // a future expiry is sound, and without a time nothing is judged
    assert.deepStrictEqual(validateCatalog(document, 0), [])
    assert.deepStrictEqual(validateCatalog(document), [])
  })

  it("names every issue, in document order", () => {
    const doc = fixture()
    doc.actions[trialIndex].offerId = otherUuid
    doc.decisions[0].offerIds.push(otherUuid)
    assert.deepStrictEqual(referenceIssues(doc), [`actions.${trialIndex}.offerId`, "decisions.0.offerIds.1"])
  })
})

describe("the catalog schema: one test per rejection reason, each naming the field", () => {
  it("a negative amount", () => {
    const doc = fixture()
    doc.offers[0].price.amountMinor = -1
    assert.deepStrictEqual(schemaIssues(doc), ["offers.0.price.amountMinor"])
  })

  it("a fractional amount", () => {
    const doc = fixture()
    doc.offers[0].price.amountMinor = 49.5
    assert.deepStrictEqual(schemaIssues(doc), ["offers.0.price.amountMinor"])
  })

  it("an upper-case currency (USD)", () => {
    const doc = fixture()
    doc.offers[0].price.currency = "USD"
    assert.deepStrictEqual(schemaIssues(doc), ["offers.0.price.currency"])
  })

  it("a three-letter code that is no ISO 4217 currency (xyz)", () => {
    const doc = fixture()
    doc.offers[0].price.currency = "xyz"
    assert.deepStrictEqual(schemaIssues(doc), ["offers.0.price.currency"])
  })

  it("an amount of -0", () => {
    const doc = fixture()
    doc.offers[0].price.amountMinor = -0
    assert.deepStrictEqual(schemaIssues(doc), ["offers.0.price.amountMinor"])
  })

  it("a two-letter currency (us)", () => {
    const doc = fixture()
    doc.offers[0].price.currency = "us"
    assert.deepStrictEqual(schemaIssues(doc), ["offers.0.price.currency"])
  })

  it("an unknown operation family", () => {
    const doc = fixture()
    doc.actions[trialIndex].family = "refund_everything"
    assert.deepStrictEqual(schemaIssues(doc), [`actions.${trialIndex}.family`])
  })

  it("an unknown evidence type", () => {
    const doc = fixture()
    doc.actions[trialIndex].evidence = ["a_feeling"]
    assert.deepStrictEqual(schemaIssues(doc), [`actions.${trialIndex}.evidence.0`])
  })

  it("an excess property on the document", () => {
    assert.deepStrictEqual(schemaIssues({ ...fixture(), comment: "hello" }), ["comment"])
  })

  it("an excess property on an offer's price", () => {
    const doc = fixture()
    doc.offers[0].price.tax = 0
    assert.deepStrictEqual(schemaIssues(doc), ["offers.0.price.tax"])
  })

  it("an excess property on an action", () => {
    const doc = fixture()
    doc.actions[trialIndex].priority = 1
    assert.deepStrictEqual(schemaIssues(doc), [`actions.${trialIndex}.priority`])
  })

  it("an excess property on a decision", () => {
    const doc = fixture()
    doc.decisions[0].note = "x"
    assert.deepStrictEqual(schemaIssues(doc), ["decisions.0.note"])
  })

  it("an action id that is not a UUID", () => {
    const doc = fixture()
    doc.actions[trialIndex].actionId = "extend"
    assert.deepStrictEqual(schemaIssues(doc), [`actions.${trialIndex}.actionId`])
  })

  it("an action key that is not a key", () => {
    const doc = fixture()
    doc.actions[trialIndex].key = "Extend Trial"
    assert.deepStrictEqual(schemaIssues(doc), [`actions.${trialIndex}.key`])
  })

  it("an action without evidence types", () => {
    const doc = fixture()
    doc.actions[trialIndex].evidence = []
    // A non-empty array reports its missing first element.
    assert.deepStrictEqual(schemaIssues(doc), [`actions.${trialIndex}.evidence.0`])
  })

  it("a frequency limit of zero", () => {
    const doc = fixture()
    doc.actions[trialIndex].frequency = { limit: 0, windowSeconds: 60 }
    assert.deepStrictEqual(schemaIssues(doc), [`actions.${trialIndex}.frequency.limit`])
  })

  it("a validUntil that is not a timestamp", () => {
    const doc = fixture()
    doc.decisions[0].validUntil = "tomorrow"
    assert.deepStrictEqual(schemaIssues(doc), ["decisions.0.validUntil"])
  })

  it("a decision leading to no action", () => {
    const doc = fixture()
    doc.decisions[0].actionIds = []
    assert.deepStrictEqual(schemaIssues(doc), ["decisions.0.actionIds.0"])
  })

  it("the fixture's trial action id is the example intake's", () => {
    assert.strictEqual(fixture().actions[trialIndex].actionId, fixtureActionIds["extend_trial"])
  })
})

describe("an action's terms and fixed parameters", () => {
  it("the schema refuses days out of range, an unknown interval or proration, and unknown parameters", () => {
    for (const [operation, path] of [
      [{ extensionDays: 366 }, "actions.0.operation.extensionDays"],
      [{ extensionDays: 14, interval: "fortnight" }, "actions.0.operation.interval"],
      [{ extensionDays: 14, proration: "sometimes" }, "actions.0.operation.proration"],
      [{ extensionDays: 14, trialRef: fixtureTrialRef }, "actions.0.operation.trialRef"]
    ] as const) {
      const doc = fixture()
      doc.actions[trialIndex].operation = operation
      assert.deepStrictEqual(schemaIssues(doc), [path])
    }
    const doc = fixture()
    doc.actions[trialIndex].safeTerms = { label: "Extend trial" }
    assert.deepStrictEqual(schemaIssues(doc), ["actions.0.safeTerms.confirmation"])
  })

  it("validateCatalog: an extend_trial operation fixes extensionDays", () => {
    const doc = fixture()
    doc.actions[trialIndex].operation = {}
    assert.deepStrictEqual(referenceIssues(doc), ["actions.0.operation.extensionDays"])
  })

  it("validateCatalog: a parameter of another family", () => {
    const trial = fixture()
    trial.actions[trialIndex].operation = { extensionDays: 14, interval: "month" }
    assert.deepStrictEqual(referenceIssues(trial), ["actions.0.operation.interval"])
    const pay = fixture()
    pay.actions[oneTimeIndex()].operation = { extensionDays: 14 }
    assert.deepStrictEqual(referenceIssues(pay), [`actions.${oneTimeIndex()}.operation.extensionDays`])
  })

  const trialAction = fixtureCatalog.actions[trialIndex]!
  const sent = intakeInput().action

  it("termsMismatch: the fixture intake carries exactly the catalog's terms and parameters", () => {
    assert.isUndefined(termsMismatch(trialAction, sent))
  })

  it("termsMismatch names the field: other days, another confirmation or label, a parameter the catalog does not fix", () => {
    const cases = [
      [{ ...sent, operation: { ...sent.operation, extensionDays: 365 } }, "action.operation.extensionDays"],
      [
        { ...sent, safeTerms: { ...sent.safeTerms, confirmation: "Extend your trial by 1 day?" } },
        "action.safeTerms.confirmation"
      ],
      [{ ...sent, safeTerms: { ...sent.safeTerms, label: "Free year" } }, "action.safeTerms.label"],
      [{ ...sent, operation: { ...sent.operation, bonus: 1 } }, "action.operation.bonus"]
    ] as const
    for (const [action, path] of cases) assert.strictEqual(termsMismatch(trialAction, action as never)?.path, path)
  })

  it("termsMismatch compares nothing a catalog action does not define", () => {
    const { operation: _, safeTerms: __, ...bare } = trialAction
    const forged = {
      operation: { ...sent.operation, extensionDays: 365 },
      safeTerms: { label: "x", confirmation: "y" }
    }
    assert.isUndefined(termsMismatch(bare, forged))
  })

  it("definedAction: the catalog's terms and days with the server's trial; what is missing is named", () => {
    assert.deepStrictEqual(definedAction(trialAction, { trialRef: fixtureTrialRef }), {
      id: trialAction.actionId,
      key: trialAction.key,
      operation: { family: "extend_trial", extensionDays: 14, trialRef: fixtureTrialRef },
      safeTerms: { label: "Extend trial", confirmation: "Extend your trial by 14 days?" }
    })
    assert.match(definedAction(trialAction, {}) as string, /trialRef/)
    const { safeTerms: _, ...noTerms } = trialAction
    assert.match(definedAction(noTerms, { trialRef: fixtureTrialRef }) as string, /safeTerms/)
    const { operation: __, ...noOperation } = trialAction
    assert.match(definedAction(noOperation, { trialRef: fixtureTrialRef }) as string, /operation/)
  })
})
