/**
 * The approval commitment's canonical encoding: known-answer vectors on both
 * crypto layers, and properties — member order does not matter, every bound field does.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { FastCheck as fc } from "effect"
import {
  commitmentHash,
  type CommitmentInput,
  dependencyHash,
  fingerprint,
  formatPrice
} from "../../../core/approval/Commitment.ts"
import { sha256Hex } from "../../../core/protocol/Digest.ts"
import { cryptoLayers } from "../../support/layers.ts"
import { dependencies, encodedInput, input, operation, vectors } from "./vectors.ts"

for (const [name, layer] of cryptoLayers) {
  describe(`approval commitment (${name})`, () => {
    it.effect("the commitment hashes the domain line and the canonical JSON, exactly", () =>
      Effect.gen(function* () {
        assert.strictEqual(yield* commitmentHash(input), yield* sha256Hex(encodedInput))
        assert.strictEqual(yield* commitmentHash(input), vectors.commitment)
      }).pipe(Effect.provide(layer))
    )

    it.effect("dependency hash and fingerprint known answers", () =>
      Effect.gen(function* () {
        assert.strictEqual(yield* dependencyHash(dependencies), vectors.dependency)
        assert.strictEqual(yield* fingerprint(operation), vectors.fingerprint)
        assert.strictEqual(
          yield* fingerprint(operation),
          yield* sha256Hex(
            `accord-fingerprint-v1\n${`{"extensionDays":14,"family":"extend_trial","trialRef":{"entityKey":"sub_1","entityKind":"subscription","version":3}}`}`
          )
        )
      }).pipe(Effect.provide(layer))
    )
  })
}

const reorder = (value: unknown, order: ReadonlyArray<number>): unknown => {
  if (Array.isArray(value) || value === null || typeof value !== "object") return value
  const entries = Object.entries(value)
  const shuffled = entries
    .map((entry, i) => [order[i % order.length]! * 100 + i, entry] as const)
    .sort((a, b) => a[0] - b[0])
    .map(([, e]) => e)
  return Object.fromEntries(shuffled.map(([k, v]) => [k, reorder(v, order)]))
}

/** Every leaf of the input, as a path, so a property can change exactly one. */
const leaves = (value: unknown, path: ReadonlyArray<string> = []): Array<ReadonlyArray<string>> =>
  value !== null && typeof value === "object"
    ? Object.entries(value).flatMap(([k, v]) => leaves(v, [...path, k]))
    : [path]

const withLeaf = (value: unknown, path: ReadonlyArray<string>, leaf: unknown): unknown => {
  if (path.length === 0) return leaf
  const [head, ...rest] = path
  const record = value as Record<string, unknown>
  return { ...record, [head!]: withLeaf(record[head!], rest, leaf) }
}

describe("approval commitment properties", () => {
  it.effect.prop(
    "member order never changes the commitment",
    [fc.array(fc.nat(9), { minLength: 1, maxLength: 12 })],
    ([order]) =>
      Effect.gen(function* () {
        assert.strictEqual(
          yield* commitmentHash(reorder(input, order) as CommitmentInput),
          yield* commitmentHash(input)
        )
      }).pipe(Effect.provide(cryptoLayers[1]![1]))
  )

  const paths = leaves(input)
  it.effect.prop(
    "changing any one bound field changes the commitment",
    [fc.nat(paths.length - 1), fc.oneof(fc.string({ maxLength: 20 }), fc.integer(), fc.constant(null))],
    ([index, replacement]) =>
      Effect.gen(function* () {
        const path = paths[index]!
        const original = path.reduce<unknown>((v, k) => (v as Record<string, unknown>)[k], input)
        fc.pre(replacement !== original)
        const changed = withLeaf(input, path, replacement) as CommitmentInput
        assert.notStrictEqual(yield* commitmentHash(changed), yield* commitmentHash(input), path.join("."))
      }).pipe(Effect.provide(cryptoLayers[1]![1]))
  )
})

describe("formatPrice", () => {
  it("uses the currency's minor digits, the same on every runtime", () => {
    assert.strictEqual(formatPrice(4900, "usd"), "49.00 USD")
    assert.strictEqual(formatPrice(5, "eur"), "0.05 EUR")
    assert.strictEqual(formatPrice(0, "usd"), "0.00 USD")
    assert.strictEqual(formatPrice(1200, "jpy"), "1200 JPY")
    assert.strictEqual(formatPrice(1234, "kwd"), "1.234 KWD")
  })
})
