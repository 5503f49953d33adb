/**
 * The compiled fast path answers exactly as the schema's parser: for every input, valid or not,
 * `FastDecode.decodeUnknownEither` / `decodeUnknownOption` / `decodeUnknown` / `is` give the same
 * result as `Schema.decodeUnknownEither` / `decodeUnknownOption` / `decodeUnknown` / `is` with the
 * same options (the same value, keys in the same order, the same
 * issues), and the protocol's hot schemas take the fast path for valid input. Where the schema's
 * parser throws (a union's discriminating field that cannot be read as text), the decoders reject.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Arbitrary from "effect/Arbitrary"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import type * as AST from "effect/SchemaAST"
import * as fc from "fast-check"
import { StoredRequest } from "../../../core/connector/Action.ts"
import {
  decodeUnknown,
  decodeUnknownEither,
  decodeUnknownOption,
  fastVerdict,
  is,
  unreadableMessage
} from "../../../core/protocol/FastDecode.ts"
import { Acknowledgement } from "../../../core/protocol/messages/Acknowledgement.ts"
import { ClaimedExecution } from "../../../core/customer/ClaimedExecution.ts"
import { exactParseOptions } from "../../../core/protocol/messages/Common.ts"
import { Completion } from "../../../core/protocol/messages/Completion.ts"
import { ExecutionRequest } from "../../../core/protocol/messages/Execution.ts"
import { intakeInput, succeeded } from "../../support/deliveries.ts"

/** Both results as comparable text: a decoded value with its key order, or the schema's issue tree. */
const shown = (result: Either.Either<unknown, ParseResult.ParseError>): string =>
  Either.match(result, {
    onLeft: (error) => `left ${ParseResult.TreeFormatter.formatErrorSync(error)}`,
    onRight: (value) => `right ${JSON.stringify(value, (_, v) => (v === undefined ? "<undefined>" : v))}`
  })

/** Values a field may be given instead of its own: valid-looking and invalid, of every JSON type. */
const replacement = fc.oneof(
  fc.constantFrom(
    "0b7f3a52-6c1e-4d8a-9f2b-3e5c7a9d1f22",
    "0B7F3A52-6C1E-4D8A-9F2B-3E5C7A9D1F22",
    "",
    "extend_trial",
    "payment.setup_only",
    "x",
    "2026-11-27T07:00:00Z",
    "a".repeat(300)
  ),
  fc.string(),
  fc.integer({ min: -2, max: 400 }),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.constant(undefined),
  fc.jsonValue({ maxDepth: 2 })
)

/** Every object and array inside `value` (itself included), as key paths. */
const containers = (value: unknown, path: ReadonlyArray<string> = []): Array<ReadonlyArray<string>> =>
  typeof value !== "object" || value === null
    ? []
    : [path, ...Object.entries(value).flatMap(([key, child]) => containers(child, [...path, key]))]

/** Sets an own property as `JSON.parse` does (a key `__proto__` too). */
const put = (target: Record<string, unknown>, key: string, value: unknown) =>
  Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true })

/** A copy of `value` with the container at `path` changed: a field replaced, removed or set to undefined, a key added, or the keys reversed. */
const changeAt = (
  value: unknown,
  path: ReadonlyArray<string>,
  change: number,
  pick: number,
  next: unknown,
  key: string
): unknown => {
  const copy: Record<string, unknown> = Array.isArray(value)
    ? ([...value] as unknown as Record<string, unknown>)
    : { ...(value as Record<string, unknown>) }
  if (path.length > 0) {
    put(copy, path[0]!, changeAt(copy[path[0]!], path.slice(1), change, pick, next, key))
    return copy
  }
  const keys = Object.keys(copy)
  const at = keys.length === 0 ? key : keys[pick % keys.length]!
  switch (change % 5) {
    case 0:
      put(copy, at, next)
      return copy
    case 1:
      delete copy[at]
      return copy
    case 2:
      put(copy, key, next)
      return copy
    case 3:
      return Array.isArray(value) ? copy : Object.fromEntries(Object.entries(copy).reverse())
    default:
      put(copy, at, undefined)
      return copy
  }
}

const mutate = (value: unknown, where: number, change: number, pick: number, next: unknown, key: string): unknown => {
  const all = containers(value)
  return all.length === 0 ? next : changeAt(value, all[where % all.length]!, change, pick, next, key)
}

/** Inputs near `valid` inputs: the inputs themselves, one to three changes of them, and unrelated JSON. */
const near = (valid: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> => {
  const change = fc.tuple(
    fc.nat(),
    fc.nat(),
    fc.nat(),
    replacement,
    fc.constantFrom("family", "extra", "x1", "note", "__proto__", "0")
  )
  return fc.oneof(
    { weight: 3, arbitrary: valid },
    {
      weight: 6,
      arbitrary: fc
        .tuple(valid, fc.array(change, { minLength: 1, maxLength: 3 }))
        .map(([value, changes]) =>
          changes.reduce(
            (current, [where, kind, pick, next, key]) => mutate(current, where, kind, pick, next, key),
            value
          )
        )
    },
    { weight: 1, arbitrary: fc.oneof(replacement, fc.jsonValue()) }
  )
}

/** Valid encoded inputs of a schema whose arbitrary generates quickly. */
const encodedValues = <A, I>(schema: Schema.Schema<A, I, never>): fc.Arbitrary<unknown> =>
  Arbitrary.make(schema).map((value) => Schema.encodeSync(schema)(value) as unknown)

const request = {
  type: "service.customer_action.execute",
  protocolVersion: 1,
  workspaceId: "0b7f3a52-6c1e-4d8a-9f2b-3e5c7a9d1f20",
  ...intakeInput(),
  actionRequestId: "0b7f3a52-6c1e-4d8a-9f2b-3e5c7a9d1f21",
  providerIdempotencyKey: "pva_" + "a".repeat(64),
  requestedAt: "2026-11-27T07:00:00.000Z",
  requestNonce: "n".repeat(32)
}
const otherOperation = { family: "grant.credits", amount: 5, note: "n", nested: { a: [1, 2] } }
const requests = fc.constantFrom<unknown>(
  request,
  { ...request, action: { ...request.action, operation: otherOperation } },
  { ...request, accountId: "acct_" + "9".repeat(40) }
)
const payment = {
  mode: "one_time_purchase",
  actionVersionId: "8a0c2e4f-6b8d-4f1a-9c3e-5b7d9f1a3c52",
  offerVersionId: null,
  expected: { amountMinor: 1200, currency: "usd", priceReferenceHash: "b".repeat(64) }
}
const storedRequests = fc.constantFrom<unknown>(
  intakeInput(),
  { ...intakeInput(), authorizedBy: { kind: "runtime_session", id: "s_1" } },
  {
    ...intakeInput(),
    action: { ...intakeInput().action, operation: { family: "payment.one_time_purchase", priceId: "price_1" } },
    payment
  },
  { ...intakeInput(), action: { ...intakeInput().action, operation: otherOperation } }
)
const ack = {
  type: "service.customer_action.ack",
  protocolVersion: 1,
  workspaceId: request.workspaceId,
  actionRequestId: request.actionRequestId,
  providerIdempotencyKey: request.providerIdempotencyKey,
  requestNonce: request.requestNonce,
  state: "accepted"
}
const continuation = {
  kind: "provider_payment_element",
  intent: "payment",
  clientSecret: "pi_1_secret_2",
  publishableKey: "pk_test_1",
  connectedAccountId: null,
  expiresAt: "1970-01-01T00:30:00.000Z",
  allowRedirects: "never"
}
const completion = {
  type: "service.customer_action.completion",
  protocolVersion: 1,
  workspaceId: request.workspaceId,
  actionRequestId: request.actionRequestId,
  providerIdempotencyKey: request.providerIdempotencyKey,
  completionId: "0b7f3a52-6c1e-4d8a-9f2b-3e5c7a9d1f23",
  completedAt: "2026-11-27T07:00:01.000Z",
  ...succeeded(request.actionRequestId)
}
const completions = fc.constantFrom<unknown>(completion, {
  ...completion,
  outcome: "failed",
  evidence: { source: "authenticated_completion", reasonCode: "declined" }
})
const acks = fc.constantFrom<unknown>(
  ack,
  { ...ack, providerReference: "ref_1" },
  { ...ack, state: "rejected", errorCode: "card_declined" },
  { ...ack, continuation }
)

/** `Option.none()` shown as one fixed error, so two `none`s compare equal. */
const emptyError = new ParseResult.ParseError({ issue: new ParseResult.Type(Schema.Never.ast, undefined, "none") })

/**
 * The schema's parser's answer, where a `TypeError` it throws (a union's discriminating field that
 * cannot be read as text) stands for the rejection the decoders answer instead.
 */
const schemaAnswer = <R>(run: () => R, rejected: () => R): R => {
  try {
    return run()
  } catch (error) {
    if (error instanceof TypeError) return rejected()
    throw error
  }
}

const unreadableError = (schema: Schema.Schema.Any, input: unknown) =>
  new ParseResult.ParseError({ issue: new ParseResult.Type(schema.ast, input, unreadableMessage) })

const sameAsSchema = <A, I>(
  name: string,
  schema: Schema.Schema<A, I, never>,
  valid: fc.Arbitrary<unknown>,
  options?: AST.ParseOptions,
  runs = 400
) =>
  it.prop(
    `${name}: the same answer as the schema's parser`,
    [near(valid)],
    ([input]) => {
      assert.strictEqual(
        shown(decodeUnknownEither(schema, options)(input)),
        shown(
          schemaAnswer(
            () => Schema.decodeUnknownEither(schema, options)(input),
            () => Either.left(unreadableError(schema, input))
          )
        )
      )
      assert.strictEqual(
        shown(Either.fromOption(decodeUnknownOption(schema, options)(input), () => emptyError)),
        shown(
          Either.fromOption(
            schemaAnswer(() => Schema.decodeUnknownOption(schema, options)(input), Option.none),
            () => emptyError
          )
        )
      )
      assert.strictEqual(
        is(schema, options)(input),
        schemaAnswer(
          () => Schema.is(schema, options)(input),
          () => false
        )
      )
    },
    { fastCheck: { numRuns: runs } }
  )

// Every node kind the compiler covers, and some it defers on, in the combinations the messages use.
const Zoo = Schema.Struct({
  literal: Schema.Literal("a", "b", 3),
  text: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(8), Schema.pattern(/^[a-z]+$/)),
  count: Schema.Int.pipe(Schema.between(0, 9)),
  flag: Schema.Boolean,
  nullable: Schema.NullOr(Schema.Number),
  maybe: Schema.optional(Schema.String),
  exactMaybe: Schema.optionalWith(Schema.Number, { exact: true }),
  anything: Schema.Unknown,
  list: Schema.Array(Schema.Struct({ k: Schema.String })),
  record: Schema.Record({ key: Schema.String.pipe(Schema.pattern(/^x/)), value: Schema.Number }),
  strict: Schema.Struct({ a: Schema.String }).annotations({ parseOptions: { onExcessProperty: "error" } }),
  // A declared struct field beside an index signature of unknown values: the field's decoded value stays.
  extensible: Schema.Struct(
    { family: Schema.String, inner: Schema.Struct({ a: Schema.Number }) },
    Schema.Record({ key: Schema.String, value: Schema.Unknown })
  ),
  choice: Schema.Union(
    Schema.Struct({ kind: Schema.Literal("a"), a: Schema.Number }),
    Schema.Struct({ kind: Schema.Literal("b"), b: Schema.String })
  )
})

// Missing keys against present ones set to undefined, under `exact` and without it.
const Presence = Schema.Struct({
  unknown: Schema.Unknown,
  undefinedOnly: Schema.Undefined,
  optional: Schema.optional(Schema.Unknown),
  exactOptional: Schema.optionalWith(Schema.Unknown, { exact: true })
})

// Beside them, nodes the fast path defers on.
const Mixed = Schema.Struct({
  ...Zoo.fields,
  // Two members that both accept `{ kind: "p", n: 1 }`: the parser's member order decides.
  overlapping: Schema.Union(
    Schema.Struct({ kind: Schema.String, n: Schema.Number }),
    Schema.Struct({ kind: Schema.Literal("p") })
  ),
  // A transformation inside a union: the fast path defers wherever an input reaches it.
  transformed: Schema.Union(Schema.Literal("none"), Schema.NumberFromString)
})

describe("FastDecode", () => {
  it.effect("a union's discriminating field that cannot be read as text is a rejection, never a throw", () =>
    Effect.gen(function* () {
      const Choice = Schema.Struct({
        choice: Schema.Union(
          Schema.Struct({ kind: Schema.Literal("a"), a: Schema.Number }),
          Schema.Struct({ kind: Schema.Literal("b"), b: Schema.String })
        )
      })
      // JSON makes an object whose `toString` is not a function: `String(value)` throws on it.
      const input = JSON.parse(`{"choice":{"kind":{"toString":"","valueOf":""},"a":0}}`)
      assert.throws(() => Schema.decodeUnknownEither(Choice)(input), TypeError)
      const rejected = decodeUnknownEither(Choice)(input)
      assert.isTrue(Either.isLeft(rejected))
      assert.include(shown(rejected), unreadableMessage)
      assert.isTrue(Option.isNone(decodeUnknownOption(Choice)(input)))
      assert.isFalse(is(Choice)(input))
      const exit = yield* Effect.exit(decodeUnknown(Choice)(input))
      assert.isTrue(Exit.isFailure(exit) && exit.cause._tag === "Fail")
    })
  )

  sameAsSchema("ExecutionRequest (exact options)", ExecutionRequest, requests, exactParseOptions)
  sameAsSchema("ExecutionRequest (default options)", ExecutionRequest, requests)
  sameAsSchema(
    "ClaimedExecution",
    ClaimedExecution,
    requests
      .map((r) => ({ ...(r as object), requestNonce: undefined, requestedAt: undefined }))
      .map((r) => JSON.parse(JSON.stringify(r))),
    exactParseOptions
  )
  sameAsSchema("StoredRequest", StoredRequest, storedRequests)
  sameAsSchema("Completion", Completion, completions, exactParseOptions)
  sameAsSchema("a schema of every covered node", Zoo, encodedValues(Zoo), undefined, 600)
  sameAsSchema(
    "a schema of every covered node (exact, excess is an error)",
    Zoo,
    encodedValues(Zoo),
    { exact: true, onExcessProperty: "error", errors: "all" },
    600
  )
  sameAsSchema("missing and undefined keys", Presence, encodedValues(Presence))
  sameAsSchema("missing and undefined keys (exact)", Presence, encodedValues(Presence), { exact: true })
  sameAsSchema("covered nodes beside deferring ones", Mixed, encodedValues(Mixed), undefined, 600)

  it.effect.prop(
    "Acknowledgement (an effectful refinement inside): the same exit as the schema's parser",
    [near(acks)],
    ([input]) =>
      Effect.gen(function* () {
        const fast = yield* Effect.exit(decodeUnknown(Acknowledgement, exactParseOptions)(input))
        const slow = yield* Effect.exit(Schema.decodeUnknown(Acknowledgement, exactParseOptions)(input))
        const text = (exit: Exit.Exit<unknown, ParseResult.ParseError>) =>
          Exit.match(exit, {
            onFailure: (cause) => shown(Either.left(cause._tag === "Fail" ? cause.error : assert.fail("defect"))),
            onSuccess: (value) => shown(Either.right(value))
          })
        assert.strictEqual(text(fast), text(slow))
      }),
    { fastCheck: { numRuns: 300 } }
  )

  it("takes the fast path for the protocol's valid messages", () => {
    assert.strictEqual(fastVerdict(ExecutionRequest.ast, exactParseOptions)(request), "decoded")
    assert.strictEqual(fastVerdict(StoredRequest.ast)(intakeInput()), "decoded")
    assert.strictEqual(fastVerdict(Completion.ast, exactParseOptions)(completion), "decoded")
    assert.strictEqual(fastVerdict(Acknowledgement.ast, exactParseOptions)(ack), "decoded")
    // The continuation's expiry is checked against the clock by an effect: the schema decides.
    assert.strictEqual(fastVerdict(Acknowledgement.ast, exactParseOptions)({ ...ack, continuation }), "deferred")
    assert.strictEqual(fastVerdict(ExecutionRequest.ast, exactParseOptions)({ ...request, extra: 1 }), "rejected")
  })

  it("answers itself for keys an index signature does not read, and for absent optional keys", () => {
    const Indexed = Schema.Struct(
      { o: Schema.optional(Schema.Number) },
      Schema.Record({ key: Schema.String.pipe(Schema.pattern(/^x/)), value: Schema.Number })
    )
    assert.strictEqual(fastVerdict(Indexed.ast)({ x1: 1, other: "s" }), "decoded")
    assert.deepStrictEqual(decodeUnknownEither(Indexed)({ x1: 1, other: "s" }), Either.right({ x1: 1 }))
    assert.strictEqual(fastVerdict(Indexed.ast, { onExcessProperty: "error" })({ x1: 1, other: "s" }), "rejected")
  })

  it("defers when two union members decode, and answers with the parser's pick", () => {
    const Overlapping = Schema.Union(
      Schema.Struct({ kind: Schema.String, n: Schema.Number }),
      Schema.Struct({ kind: Schema.Literal("p") })
    )
    const input = { kind: "p", n: 1 }
    assert.strictEqual(fastVerdict(Overlapping.ast)(input), "deferred")
    // The parser tries the member with the literal first: not the declaration order.
    assert.deepStrictEqual(Schema.decodeUnknownEither(Overlapping)(input), Either.right({ kind: "p" }))
    assert.deepStrictEqual(decodeUnknownEither(Overlapping)(input), Either.right({ kind: "p" }))
    assert.strictEqual(fastVerdict(Overlapping.ast)({ kind: "q", n: 1 }), "decoded")
    assert.strictEqual(fastVerdict(Overlapping.ast)({ kind: 1 }), "rejected")
  })
})
