/**
 * The pieces every group of the API declaration (`adapters/http/api/*Api.ts`) is built from: the
 * problem document as a Schema (what `Problem.toAnswer` writes), one error schema per status with
 * the problem codes it can carry, the bearer security, the workspace path parameter and the paged
 * list envelope `{ data, nextCursor }`.
 *
 * The declaration is the single source of every route's path and documentation: `HttpApiBuilder`
 * serves it (`Declared.ts`) and `OpenApi.fromApi` turns it into `/openapi.json`.
 */
import type * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import type * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiMiddleware from "@effect/platform/HttpApiMiddleware"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as HttpApiSecurity from "@effect/platform/HttpApiSecurity"
import * as OpenApi from "@effect/platform/OpenApi"
import * as JSONSchema from "effect/JSONSchema"
import * as ParseResult from "effect/ParseResult"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import type { NotFound, NotFoundResource } from "../../../core/protocol/NotFound.ts"
import * as ErrorMap from "../ErrorMap.ts"
import { adminWorkspacePath } from "../Paths.ts"
import * as Problem from "../Problem.ts"

/**
 * A failing field as a problem lists it.
 */
export const FieldError = Schema.Struct({
  path: Schema.String.annotations({
    description: 'where: a dotted path into the body or a query parameter\'s name; "" for the whole body'
  }),
  message: Schema.String.annotations({ description: "what was expected; never the received value" }),
  code: Schema.optional(
    Schema.String.annotations({ description: "the kind of issue, where one answer lists several kinds" })
  )
}).annotations({ identifier: "ProblemFieldError" })

const problemFields = {
  type: Schema.String.annotations({ description: "urn:accord:problem:<code>" }),
  title: Schema.String.annotations({ description: "the status's reason phrase" }),
  detail: Schema.String.annotations({ description: "a fixed, human-readable explanation" }),
  errors: Schema.optional(Schema.Array(FieldError).annotations({ description: "the failing fields (at most 20)" })),
  errors_omitted: Schema.optional(Schema.Int.annotations({ description: "how many field errors were left out" }))
}

/** The problem document of `status` whose `code` is one of `codes`, as `Problem.toAnswer` writes it. */
const problemDocument = (
  status: number,
  codes: readonly [string, ...Array<string>],
  detail: string,
  options?: { readonly errors?: ReadonlyArray<Problem.ProblemFieldError>; readonly description?: string }
) =>
  Schema.Struct({
    ...problemFields,
    status: Schema.Literal(status),
    code: Schema.Literal(...codes).annotations({ description: "the stable problem code" })
  }).annotations({
    identifier: `Problem_${status}_${codes.join("_")}`,
    description: `${options?.description ?? "Problem"} (code ${codes.join(", ")})`,
    examples: [
      Problem.toAnswer(
        Problem.make(status, codes[0], detail, options?.errors === undefined ? undefined : { errors: options.errors })
      ).body as never
    ]
  })

/**
 * A declared error: the failure `A` a handler may fail with, answered as the problem document of
 * one status (`application/problem+json`). Encoding is `ErrorMap.toProblem`, the one map; the
 * document is what `/openapi.json` shows. Decoding is refused: clients read a problem document as
 * a problem (`adapters/sdk/internal/declared.ts`), never back into the server's error.
 */
const declaredError = <A extends ErrorMap.DomainError | Problem.Problem>(
  is: (u: unknown) => u is A,
  status: number,
  codes: readonly [string, ...Array<string>],
  detail: string,
  options?: { readonly errors?: ReadonlyArray<Problem.ProblemFieldError>; readonly description?: string }
) => {
  const document = problemDocument(status, codes, detail, options)
  return HttpApiSchema.withEncoding(
    Schema.transformOrFail(document, Schema.declare(is), {
      strict: false,
      decode: (_, __, ast) => ParseResult.fail(new ParseResult.Forbidden(ast, _, "an answer is never decoded back")),
      encode: (error) => ParseResult.succeed(Problem.toAnswer(ErrorMap.toProblem(error)).body)
    }).annotations({ [HttpApiSchema.AnnotationStatus]: status }),
    { kind: "Json", contentType: Problem.contentType }
  )
}

/**
 * An RFC 9457 problem the edge raises itself (`Problem`: a key, a body, a path), answered with
 * `status` and one of `codes`; `detail` is the example's detail (the first code's).
 */
export const problem = (
  status: number,
  codes: readonly [string, ...Array<string>],
  detail: string,
  options?: { readonly errors?: ReadonlyArray<Problem.ProblemFieldError>; readonly description?: string }
) =>
  declaredError(
    (u): u is Problem.Problem => u instanceof Problem.Problem && u.status === status && codes.includes(u.code),
    status,
    codes,
    detail,
    options
  )

/**
 * A problem the edge answers in fixed words (`ErrorMap`'s own, such as an ingest refusal),
 * declared from the problem itself, so its status, code and detail are written once.
 */
export const refusal = (answer: Problem.Problem, description: string) =>
  problem(answer.status, [answer.code], answer.detail, {
    description,
    ...(answer.errors !== undefined ? { errors: answer.errors } : {})
  })

/** The domain error of a tag. */
export type DomainErrorOf<Tag extends ErrorMap.DomainError["_tag"]> = Extract<ErrorMap.DomainError, { _tag: Tag }>

/**
 * The declared answers of core's domain error `tag`, one per status, generated from the one table
 * (`ErrorMap.declaredAnswers`): a handler that can fail with it declares these.
 */
export const answers = <Tag extends ErrorMap.DomainError["_tag"]>(tag: Tag) =>
  ErrorMap.declaredAnswers[tag].map((answer) =>
    declaredError(
      (u): u is DomainErrorOf<Tag> => Predicate.isTagged(u, tag),
      answer.status,
      answer.codes,
      answer.detail,
      answer
    )
  )

/**
 * Adds the declared answers of each tag to an endpoint (or a group): the handler may then fail
 * with those domain errors, and `/openapi.json` lists each one's statuses and codes.
 */
export const declaring =
  <const Tags extends ReadonlyArray<ErrorMap.DomainError["_tag"]>>(...tags: Tags) =>
  <
    Self extends {
      /** The endpoint's or group's own `addError`. */
      readonly addError: (schema: Schema.Schema<any, any, never>) => unknown
    }
  >(
    self: Self
  ): AddedError<Self, DomainErrorOf<Tags[number]>> =>
    tags.flatMap((tag) => answers(tag)).reduce((declared: any, schema) => declared.addError(schema), self)

/** `self` with `E` added to the errors it declares. */
export type AddedError<Self, E> =
  Self extends HttpApiEndpoint.HttpApiEndpoint<
    infer Name,
    infer Method,
    infer Path,
    infer UrlParams,
    infer Payload,
    infer Headers,
    infer Success,
    infer Error,
    infer R,
    infer RE
  >
    ? HttpApiEndpoint.HttpApiEndpoint<Name, Method, Path, UrlParams, Payload, Headers, Success, Error | E, R, RE>
    : Self extends HttpApiGroup.HttpApiGroup<infer Id, infer Endpoints, infer Error, infer R, infer TopLevel>
      ? HttpApiGroup.HttpApiGroup<Id, Endpoints, Error | E, R, TopLevel>
      : never

/**
 * The problems of the admin guard and the edge, on every admin route.
 */
export const guardProblems = [
  problem(400, ["invalid_path", "invalid_query"], "a query parameter is not UTF-8 or holds a NUL character", {
    description: "A path segment or query parameter that cannot be stored"
  }),
  problem(401, ["unauthorized"], "a valid API key is required (Authorization: Bearer)", {
    description: "No key, or an unknown or revoked key (with WWW-Authenticate: Bearer)"
  }),
  problem(403, ["forbidden"], "the API key does not belong to this workspace", {
    description: "A key of another workspace, or without the route's scope"
  })
] as const

/**
 * An admin group as the one admin guard serves it: under the workspace's prefix, behind the bearer
 * key, with the guard's problems and storage's 503 declared once for every route of the group.
 */
export const adminGuarded = <Id extends string, Endpoints extends HttpApiEndpoint.HttpApiEndpoint.Any, Error, R>(
  group: HttpApiGroup.HttpApiGroup<Id, Endpoints, Error, R, false>
) =>
  group
    .prefix(adminWorkspacePath)
    .middleware(ApiKey)
    .addError(guardProblems[0])
    .addError(guardProblems[1])
    .addError(guardProblems[2])
    .pipe(declaring("StorageError"))

/**
 * The problems of a JSON request body (`Body.readJson`): unreadable, malformed or invalid (400),
 * too large (413), not JSON (415).
 */
export const bodyProblems = [
  problem(
    400,
    ["invalid_body", "malformed_json", "duplicate_key", "unstorable_text", "unreadable_body"],
    "the request body has invalid fields",
    {
      errors: [{ path: "scope", message: "must be one of ingest, developer:read, admin" }],
      description: "A body that is not UTF-8 JSON, repeats a key, holds unstorable text or has invalid fields"
    }
  ),
  problem(413, ["content_too_large"], "the request body exceeds 65536 bytes", {
    description: "A body over the route's limit"
  }),
  problem(415, ["unsupported_media_type"], "the request body must be application/json", {
    description: "A body that is not application/json"
  })
] as const

/**
 * `404 not_found` for an unknown `resource`, with its detail (`ErrorMap.notFoundDetail`).
 */
export const notFound = (resource: NotFoundResource) =>
  declaredError(
    (u): u is NotFound => Predicate.isTagged(u, "NotFound") && (u as NotFound).resource === resource,
    404,
    ["not_found"],
    ErrorMap.notFoundDetail[resource],
    { description: "Nothing by that id here" }
  )

/**
 * The bearer key of the admin routes (`admin` or `developer:read` scope, as each route says) and of
 * the ingest route (`ingest` scope). Its served implementation is a pass-through (`Declared.ts`):
 * the guard is `Auth.guarded`, which every admin handler runs first.
 */
export class ApiKey extends HttpApiMiddleware.Tag<ApiKey>()("@accord/http/ApiKey", {
  security: {
    /** The workspace's API key, as a bearer credential. */
    apiKey: HttpApiSecurity.bearer.pipe(
      HttpApiSecurity.annotate(
        OpenApi.Description,
        "An Accord API key: `Authorization: Bearer <secret>`. Keys have one scope (`admin`, `developer:read` or `ingest`) and belong to one workspace; each route says which scopes it takes. The secret is shown once, when the key is created."
      )
    )
  }
}) {}

/**
 * The workspace path parameter of every admin route.
 */
export const WorkspaceId = Schema.String.annotations({
  description: "the workspace's id",
  examples: ["6f1d2c3b-4a5e-4f60-8a71-92b3c4d5e6f7"]
})

/**
 * A UUID path parameter or field.
 */
export const UuidText = Schema.String.annotations({
  format: "uuid",
  examples: ["3c2b1a09-8f7e-4d6c-a5b4-c3d2e1f0a9b8"]
})

/**
 * An RFC 3339 timestamp as answered (UTC, milliseconds).
 */
export const Timestamp = Schema.String.annotations({ format: "date-time", examples: ["2026-11-22T10:15:30.000Z"] })

/** Any query value: a parameter given once is text, given again an array of texts. */
const anyQueryValue = Schema.Union(Schema.String, Schema.Array(Schema.String))

/**
 * A query parameter of a list route, documented as `documented` and decoded by `HttpApiBuilder` as
 * any text. The builder decodes a declared query before the handler runs, so a stricter schema
 * would answer a bad query 400 before the admin guard's 401 and 403, with its own error instead of
 * `invalid_query`; the route checks its query itself, after the guard, naming every failing
 * parameter in fixed words (`Paging.ts`).
 */
export const queryParam = (documented: Schema.Schema.Any) => {
  const { $schema: _, ...jsonSchema } = JSONSchema.make(documented) as unknown as Record<string, unknown>
  return Schema.optional(anyQueryValue.annotations({ jsonSchema }))
}

/**
 * The paging query of a list route: `cursor` (from the previous page's `nextCursor`) and `limit`.
 */
export const pageParams = {
  cursor: queryParam(Schema.String.annotations({ description: "the previous page's nextCursor" })),
  limit: queryParam(
    Schema.String.annotations({ description: "page size, an integer from 1 to 200 (default 50)", pattern: "^[0-9]+$" })
  )
}

/**
 * A page of a list: `{ data, nextCursor }`, `nextCursor` null on the last page.
 */
export const page = <S extends Schema.Schema.Any>(item: S, example: Schema.Schema.Type<S>) =>
  Schema.Struct({
    data: Schema.Array(item),
    nextCursor: Schema.NullOr(Schema.String).annotations({
      description: "pass as `cursor` for the next page; null on the last"
    })
  }).annotations({ examples: [{ data: [example], nextCursor: null } as never] })

/**
 * The path parameters of an admin route: the workspace and the route's own.
 */
export const adminPath = <Fields extends Schema.Struct.Fields>(fields: Fields) =>
  Schema.Struct({ workspaceId: WorkspaceId, ...fields })

/**
 * Documents response headers of one status (the declaration has no place for them): an
 * `OpenApi.Transform` for the endpoint's operation.
 */
export const responseHeaders =
  (status: number, headers: Readonly<Record<string, { readonly description: string; readonly required?: boolean }>>) =>
  (operation: Record<string, any>): Record<string, any> => {
    const response = operation["responses"]?.[status]
    if (response === undefined) return operation
    const documented = Object.fromEntries(
      Object.entries(headers).map(([name, { description, required }]) => [
        name,
        { description, required: required ?? false, schema: { type: "string" } }
      ])
    )
    return {
      ...operation,
      responses: {
        ...operation["responses"],
        [status]: { ...response, headers: { ...response.headers, ...documented } }
      }
    }
  }
