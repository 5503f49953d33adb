/**
 * A compiled fast path for decoding with a message schema, with the schema's own parser as the
 * judge of everything the fast path does not accept.
 *
 * Effect Schema's parser answers every node with an `Either` and every field with a `Pointer`, so
 * a valid execution request of 25 fields takes it about 35 µs; the service and the kit decode one
 * or two such bodies per action. `decodeUnknownEither` compiles the schema's AST once into plain
 * checks that call the schema's own refinement filters, and answers with the decoded value only
 * when every check passes. Anything else (an invalid input, an ambiguous union) goes to
 * `Schema.decodeUnknownEither` with the same options, so rejections and their issues are exactly
 * the schema's. A schema with a node the compiler does not cover (a transformation that
 * answers an effect, a declaration, a suspension, a tuple with fixed elements, a decoding fallback, `propertyOrder` or
 * `onExcessProperty: "preserve"`) defers to the schema wherever an input reaches that node; a union
 * answers only when exactly one member decodes and every other one is certain to fail.
 *
 * What the fast path answers is what the schema's parser would answer, property-tested in
 * test/core/protocol/FastDecode.test.ts: the same value, with the same keys in the same order.
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as AST from "effect/SchemaAST"

/** The schema's parser rejects the input (certain). */
const fail: unique symbol = Symbol("FastDecode.fail")
/** The compiled checks cannot tell (a node they do not cover, an ambiguous union): the schema decides. */
const defer: unique symbol = Symbol("FastDecode.defer")

/** The decoded value, `fail` or `defer`. */
type Fast = (input: unknown) => unknown

const deferred: Fast = () => defer

const isMiss = (value: unknown): boolean => value === fail || value === defer

/** `mergeInternalOptions` of the schema's parser: a node's `parseOptions` annotation over the options it was called with. */
const merge = (
  options: AST.ParseOptions | undefined,
  override: AST.ParseOptions | undefined
): AST.ParseOptions | undefined =>
  override === undefined ? options : options === undefined ? override : { ...options, ...override }

const isRecord = (input: unknown): input is Record<PropertyKey, unknown> =>
  typeof input === "object" && input !== null && !Array.isArray(input)

const hasOwn = Object.prototype.hasOwnProperty

/** The keys an index signature reads (the parser's `getKeysForIndexSignature`). */
const indexKeys = (parameter: AST.AST): ((input: object) => ReadonlyArray<PropertyKey>) | undefined => {
  switch (parameter._tag) {
    case "StringKeyword":
    case "TemplateLiteral":
      return Object.keys
    case "SymbolKeyword":
      return Object.getOwnPropertySymbols
    case "Refinement":
      return indexKeys(parameter.from)
    default:
      return undefined
  }
}

const compile = (ast: AST.AST, called: AST.ParseOptions | undefined): Fast => {
  if (Option.isSome(AST.getDecodingFallbackAnnotation(ast))) return deferred
  const options = merge(called, Option.getOrUndefined(AST.getParseOptionsAnnotation(ast)))
  if (options?.propertyOrder === "original" || options?.onExcessProperty === "preserve") return deferred
  switch (ast._tag) {
    case "StringKeyword":
      return (input) => (typeof input === "string" ? input : fail)
    case "NumberKeyword":
      return (input) => (typeof input === "number" ? input : fail)
    case "BooleanKeyword":
      return (input) => (typeof input === "boolean" ? input : fail)
    case "UndefinedKeyword":
      return (input) => (input === undefined ? input : fail)
    case "UnknownKeyword":
    case "AnyKeyword":
      return (input) => input
    case "Literal": {
      const literal = ast.literal
      return (input) => (input === literal ? input : fail)
    }
    case "Refinement": {
      const from = compile(ast.from, options)
      const filterOptions = options ?? AST.defaultParseOption
      return (input) => {
        const value = from(input)
        if (isMiss(value)) return value
        return Option.isSome(ast.filter(value, filterOptions, ast)) ? fail : value
      }
    }
    case "Union": {
      const members = ast.types.map((member) => compile(member, options))
      // The parser answers with the first member (in its order) that decodes; exactly one member
      // decoding, every other one failing, makes that answer certain. Two or more: the schema picks.
      return (input) => {
        let found: unknown = fail
        for (const member of members) {
          const value = member(input)
          if (value === fail) continue
          if (value === defer || found !== fail) return defer
          found = value
        }
        return found
      }
    }
    case "TupleType": {
      if (ast.elements.length > 0 || ast.rest.length !== 1) return deferred
      const element = compile(ast.rest[0]!.type, options)
      return (input) => {
        if (!Array.isArray(input)) return fail
        const output: Array<unknown> = new Array(input.length)
        for (let i = 0; i < input.length; i++) {
          const value = element(input[i])
          if (isMiss(value)) return value
          output[i] = value
        }
        return output
      }
    }
    case "TypeLiteral":
      return compileTypeLiteral(ast, options)
    case "Transformation":
      return compileTransformation(ast, options)
    default:
      // Declarations, suspensions, …: the schema decides.
      return deferred
  }
}

/**
 * A transformation whose decoding answers at once (`Schema.transform`'s, which the parser runs as
 * an `Either`): the source's checks, the decoding, then the target's checks, as the parser runs
 * them. A decoding that fails or answers an effect leaves the input to the schema.
 */
const compileTransformation = (ast: AST.Transformation, options: AST.ParseOptions | undefined): Fast => {
  const transformation = ast.transformation
  if (transformation._tag !== "FinalTransformation") return deferred
  const from = compile(ast.from, options)
  const to = compile(ast.to, options)
  const decodeOptions = options ?? AST.defaultParseOption
  return (input) => {
    const value = from(input)
    if (isMiss(value)) return value
    const decoded = transformation.decode(value, decodeOptions, ast, input)
    if (!Either.isEither(decoded) || Either.isLeft(decoded)) return defer
    return to(decoded.right)
  }
}

const compileTypeLiteral = (ast: AST.TypeLiteral, options: AST.ParseOptions | undefined): Fast => {
  if (ast.propertySignatures.length === 0 && ast.indexSignatures.length === 0) {
    return (input) => (input === null || input === undefined ? fail : input)
  }
  const properties = ast.propertySignatures.map((ps) => ({
    name: ps.name,
    optional: ps.isOptional,
    decode: compile(ps.type, options)
  }))
  const expected = new Set<PropertyKey>(properties.map((p) => p.name))
  const keysOf = ast.indexSignatures.map((is) => indexKeys(is.parameter))
  if (keysOf.some((keys) => keys === undefined)) return deferred
  const indexes = ast.indexSignatures.map((is, i) => ({
    keys: keysOf[i]!,
    parameter: compile(is.parameter, options),
    decode: compile(is.type, options)
  }))
  const excessIsError = options?.onExcessProperty === "error"
  const exact = options?.exact === true
  return (input) => {
    if (!isRecord(input)) return fail
    if (excessIsError) {
      for (const key of Reflect.ownKeys(input)) {
        if (expected.has(key)) continue
        let matched = false
        for (const index of indexes) {
          const parameter = index.parameter(key)
          if (parameter === defer) return defer
          if (parameter !== fail) {
            matched = true
            break
          }
        }
        if (!matched) return fail
      }
    }
    const output: Record<PropertyKey, unknown> = {}
    for (const property of properties) {
      if (!hasOwn.call(input, property.name)) {
        if (property.optional) continue
        if (exact) return fail
      }
      const value = property.decode(input[property.name])
      if (isMiss(value)) return value
      output[property.name] = value
    }
    for (const index of indexes) {
      for (const key of index.keys(input)) {
        const parameter = index.parameter(key)
        if (parameter === defer) return defer
        if (parameter === fail) continue
        const value = index.decode(input[key])
        if (isMiss(value)) return value
        if (!expected.has(key)) output[key] = value
      }
    }
    return output
  }
}

/**
 * The schema's parser reads a union's discriminating field with `String(value)`, which throws a
 * `TypeError` for an object whose `toString` and `valueOf` are not functions, and JSON makes one
 * (`{"kind":{"toString":""}}`). Such an input is rejected like any other, never a defect: the
 * rejection names the schema and says why.
 */
export const unreadableMessage = "a field of the input cannot be read as text"

const parsed = <R>(run: () => R, rejected: () => R): R => {
  try {
    return run()
  } catch (error) {
    if (error instanceof TypeError) return rejected()
    throw error
  }
}

const unreadable = (ast: AST.AST, input: unknown) =>
  new ParseResult.ParseError({ issue: new ParseResult.Type(ast, input, unreadableMessage) })

/**
 * How the compiled checks answer `input`: `"decoded"` (the schema's parser would decode it to the
 * same value), `"rejected"` (it would reject it) or `"deferred"` (they cannot tell). For tests and
 * diagnostics; decoding goes through {@link decodeUnknownEither}, {@link decodeUnknown},
 * {@link decodeUnknownOption} or {@link is}.
 */
export const fastVerdict = (
  ast: AST.AST,
  options?: AST.ParseOptions
): ((input: unknown) => "decoded" | "rejected" | "deferred") => {
  const fast = compile(ast, options)
  return (input) => {
    const value = fast(input)
    return value === fail ? "rejected" : value === defer ? "deferred" : "decoded"
  }
}

/**
 * `Schema.decodeUnknownEither(schema, options)`, answered by the compiled checks when they decode
 * the input and by the schema's parser otherwise (so every rejection is the schema's own).
 */
export const decodeUnknownEither = <A, I>(
  schema: Schema.Schema<A, I, never>,
  options?: AST.ParseOptions
): ((input: unknown) => Either.Either<A, ParseResult.ParseError>) => {
  const fast = compile(schema.ast, options)
  const slow = Schema.decodeUnknownEither(schema, options)
  return (input) => {
    const value = fast(input)
    return isMiss(value)
      ? parsed(
          () => slow(input),
          () => Either.left(unreadable(schema.ast, input))
        )
      : Either.right(value as A)
  }
}

type EffectDecoder = (input: unknown) => Effect.Effect<unknown, ParseResult.ParseError, unknown>

/** Effect-form decoders by options object (module constants in practice) and AST: `decodeBody` and `readJson` ask per message. */
const effectDecoders = new WeakMap<object, WeakMap<AST.AST, EffectDecoder>>()
const noOptions = {}

/**
 * `Schema.decodeUnknown(schema, options)` (an effect, for schemas with effectful refinements),
 * answered by the compiled checks when they decode the input and by the schema's parser otherwise.
 * Built once per schema and options object, so a caller may ask for it per message.
 */
export const decodeUnknown = <A, I, R>(
  schema: Schema.Schema<A, I, R>,
  options?: AST.ParseOptions
): ((input: unknown) => Effect.Effect<A, ParseResult.ParseError, R>) => {
  let byAst = effectDecoders.get(options ?? noOptions)
  if (byAst === undefined) {
    byAst = new WeakMap()
    effectDecoders.set(options ?? noOptions, byAst)
  }
  let decoder = byAst.get(schema.ast)
  if (decoder === undefined) {
    const fast = compile(schema.ast, options)
    const slow = Schema.decodeUnknown(schema, options) as EffectDecoder
    decoder = (input) => {
      const value = fast(input)
      return isMiss(value)
        ? parsed(
            () => slow(input),
            () => Effect.fail(unreadable(schema.ast, input))
          )
        : Effect.succeed(value)
    }
    byAst.set(schema.ast, decoder)
  }
  return decoder as (input: unknown) => Effect.Effect<A, ParseResult.ParseError, R>
}

/**
 * `Schema.decodeUnknownOption(schema, options)`: the compiled checks answer when they decode the
 * input or are certain the schema rejects it; the schema's parser answers the rest.
 */
export const decodeUnknownOption = <A, I>(
  schema: Schema.Schema<A, I, never>,
  options?: AST.ParseOptions
): ((input: unknown) => Option.Option<A>) => {
  const fast = compile(schema.ast, options)
  const slow = Schema.decodeUnknownOption(schema, options)
  return (input) => {
    const value = fast(input)
    return value === fail
      ? Option.none()
      : value === defer
        ? parsed(() => slow(input), Option.none)
        : Option.some(value as A)
  }
}

/**
 * `Schema.is(schema, options)` (the type side, `exact: true` unless `options` say otherwise): the
 * compiled checks answer when they are certain, the schema's guard otherwise.
 */
export const is = <A, I, R>(
  schema: Schema.Schema<A, I, R>,
  options?: AST.ParseOptions
): ((input: unknown) => input is A) => {
  const fast = compile(AST.typeAST(schema.ast), { exact: true, ...options })
  const slow = Schema.is(schema, options)
  return (input): input is A => {
    const value = fast(input)
    return value === fail
      ? false
      : value === defer
        ? parsed(
            () => slow(input),
            () => false
          )
        : true
  }
}
