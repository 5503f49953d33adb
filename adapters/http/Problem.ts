/**
 * The service's own HTTP errors as RFC 9457 problem details (docs/decisions.md, "Problem details"):
 * `application/problem+json` with `type`, `title`, `status`, `detail`, a stable snake_case `code`,
 * and for validation `errors: [{ path, message, code? }]`.
 *
 * Error answers are bounded: at most {@link maxFieldErrors} field errors and about
 * {@link maxFieldErrorsBytes} bytes of them, the rest counted in `errors_omitted` (present only when
 * some were left out), so a body full of faults never gets an answer larger than itself
 * (spec "Limits" 7; every problem stays under 8 KiB).
 *
 * A `Problem` is built only from fixed texts chosen by the code that raises it: never a stack
 * trace, a secret, a header or a received value, so rendering it can never leak one.
 */
import type * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Schema from "effect/Schema"
import * as Answer from "./Answer.ts"

/**
 * One failing field of a request body: where (dotted path, `""` for the whole body) and what was
 * expected, and where one answer lists issues of several kinds, the kind (a problem `code`).
 * Never the received value.
 */
export const ProblemFieldError: Schema.Struct<{
  path: typeof Schema.String
  message: typeof Schema.String
  code: Schema.optional<typeof Schema.String>
}> = Schema.Struct({ path: Schema.String, message: Schema.String, code: Schema.optional(Schema.String) })

export type ProblemFieldError = typeof ProblemFieldError.Type

/**
 * An HTTP error answered as problem details. `headers` carries the few headers a status requires
 * (`WWW-Authenticate` on 401, `Retry-After` on 429).
 */
export class Problem extends Schema.TaggedError<Problem>()("Problem", {
  status: Schema.Int,
  code: Schema.String,
  title: Schema.String,
  detail: Schema.String,
  errors: Schema.optional(Schema.Array(ProblemFieldError)),
  errors_omitted: Schema.optional(Schema.Int),
  headers: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String }))
}) {
  override get message(): string {
    return `${this.status} ${this.code}: ${this.detail}`
  }
}

/** The media type of every problem document (RFC 9457). */
export const contentType: string = "application/problem+json"

/**
 * The problem `type` URI for a code. A URN rather than a URL: Accord has no documentation host,
 * and RFC 9457 only needs the URI to be stable and unique per problem type.
 */
export const typeUri = (code: string): string => `urn:accord:problem:${code}`

const titles: Record<number, string> = {
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  409: "Conflict",
  410: "Gone",
  413: "Content Too Large",
  415: "Unsupported Media Type",
  422: "Unprocessable Content",
  429: "Too Many Requests",
  500: "Internal Server Error",
  503: "Service Unavailable"
}

/**
 * At most this many field errors in one problem.
 */
export const maxFieldErrors = 20

/**
 * At most about this many bytes of field errors (serialized) in one problem, keeping the whole
 * answer under 8 KiB.
 */
export const maxFieldErrorsBytes = 6 * 1024

/** A path or message longer than this is cut (paths are built from received names). */
const maxFieldTextLength = 512

const utf8 = new TextEncoder()

const cut = (text: string): string =>
  text.length > maxFieldTextLength ? text.slice(0, maxFieldTextLength - 1) + "…" : text

/**
 * The first field errors that fit the bounds ({@link maxFieldErrors}, {@link maxFieldErrorsBytes}),
 * and how many were left out.
 */
export const boundFieldErrors = (
  errors: ReadonlyArray<ProblemFieldError>
): { readonly errors: ReadonlyArray<ProblemFieldError>; readonly omitted: number } => {
  const kept: Array<ProblemFieldError> = []
  let bytes = 2
  for (const error of errors) {
    if (kept.length >= maxFieldErrors) break
    const bounded: ProblemFieldError =
      error.path.length > maxFieldTextLength || error.message.length > maxFieldTextLength
        ? { ...error, path: cut(error.path), message: cut(error.message) }
        : error
    bytes += utf8.encode(JSON.stringify(bounded)).length + 1
    if (bytes > maxFieldErrorsBytes) break
    kept.push(bounded)
  }
  return { errors: kept, omitted: errors.length - kept.length }
}

const boundedErrors = (errors: ReadonlyArray<ProblemFieldError>) => {
  const bounded = boundFieldErrors(errors)
  return bounded.omitted > 0 ? { errors: bounded.errors, errors_omitted: bounded.omitted } : { errors: bounded.errors }
}

/**
 * A problem whose title is the status's reason phrase (RFC 9457 recommends that for generic types).
 */
export const make = (
  status: number,
  code: string,
  detail: string,
  extra?: { readonly errors?: ReadonlyArray<ProblemFieldError>; readonly headers?: Record<string, string> }
): Problem =>
  new Problem({
    status,
    code,
    title: titles[status] ?? "Error",
    detail,
    ...(extra?.errors !== undefined ? boundedErrors(extra.errors) : {}),
    ...(extra?.headers !== undefined ? { headers: extra.headers } : {})
  })

/**
 * 400: the request cannot be read (malformed JSON, invalid fields).
 */
export const badRequest = (code: string, detail: string, errors?: ReadonlyArray<ProblemFieldError>): Problem =>
  make(400, code, detail, errors === undefined ? undefined : { errors })

/**
 * 401 with the Bearer challenge (RFC 6750): no, unknown or revoked credentials.
 */
export const unauthorized = (detail: string): Problem =>
  make(401, "unauthorized", detail, { headers: { "www-authenticate": "Bearer" } })

/**
 * 403: authenticated, but the key's scope or workspace does not allow this.
 */
export const forbidden = (detail: string): Problem => make(403, "forbidden", detail)

/** A 404 `not_found` problem whose detail names what was not found (never a received value). */
export const notFound = (detail: string): Problem => make(404, "not_found", detail)

/**
 * 405 with the `Allow` header (RFC 9110 §15.5.6): the path exists, but not for this method.
 */
export const methodNotAllowed = (method: string, allowed: ReadonlyArray<string>): Problem =>
  make(405, "method_not_allowed", `${method} is not allowed on this path; allowed: ${allowed.join(", ")}`, {
    headers: { allow: allowed.join(", ") }
  })

/** A 413 `content_too_large` problem stating the route's body limit. */
export const contentTooLarge = (maxBytes: number): Problem =>
  make(413, "content_too_large", `the request body exceeds ${maxBytes} bytes`)

/** A 415 `unsupported_media_type` problem naming the media type the route takes. */
export const unsupportedMediaType = (expected: string): Problem =>
  make(415, "unsupported_media_type", `the request body must be ${expected}`)

/**
 * 503: a dependency (storage) is unreachable; the request may be retried.
 */
export const unavailable = (code: string, detail: string): Problem => make(503, code, detail)

/**
 * 500 with a fixed detail: whatever went wrong stays in the server log.
 */
export const internal: Problem = make(500, "internal_error", "an unexpected error occurred")

/**
 * A problem as an `application/problem+json` answer.
 */
export const toAnswer = (problem: Problem): Answer.Answer => {
  const answer = Answer.json(
    {
      type: typeUri(problem.code),
      title: problem.title,
      status: problem.status,
      detail: problem.detail,
      code: problem.code,
      ...(problem.errors !== undefined ? { errors: problem.errors } : {}),
      ...(problem.errors_omitted !== undefined ? { errors_omitted: problem.errors_omitted } : {})
    },
    problem.status,
    contentType
  )
  return problem.headers === undefined ? answer : { ...answer, headers: { ...answer.headers, ...problem.headers } }
}

/**
 * Renders a problem as an `application/problem+json` response.
 */
export const toResponse = (problem: Problem): HttpServerResponse.HttpServerResponse =>
  Answer.toResponse(toAnswer(problem))
