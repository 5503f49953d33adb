/**
 * The query of the admin list routes (`GET /accounts`, `/action-requests`, `/feature-gates`):
 * `limit` (1 to 200, default 50) and an opaque `cursor` from the previous page's `nextCursor`,
 * answered as `{ data, nextCursor }` like `GET /events`. A page is read with one row more than
 * asked for, which says whether there is a next page.
 */
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Problem from "./Problem.ts"

/**
 * A list route's query has invalid parameters (every one listed, without its value).
 */
export class InvalidQuery extends Data.TaggedError("InvalidQuery")<{
  readonly errors: ReadonlyArray<Problem.ProblemFieldError>
}> {}

/**
 * Fails with `InvalidQuery` when the query, as parsed so far, has errors.
 */
export const validQuery = (query: ListQuery): Effect.Effect<void, InvalidQuery> =>
  query.errors.length > 0 ? Effect.fail(new InvalidQuery({ errors: query.errors })) : Effect.void

/** Items on a list page when the request names no `limit`. */
export const defaultPageSize = 50

/** The largest `limit` a list route accepts; larger is a 400 `invalid_query`. */
export const maxPageSize = 200

/**
 * A list route's query, as parsed so far: its parameters, the field errors found, and the limit.
 */
export interface ListQuery {
  readonly params: URLSearchParams
  readonly errors: Array<Problem.ProblemFieldError>
  readonly limit: number
}

/**
 * The request's query and its `limit`. The original URL: under a prefixed router, `url` is cut by
 * the prefix pattern's length.
 */
export const listQuery: Effect.Effect<ListQuery, never, HttpServerRequest.HttpServerRequest> = Effect.map(
  HttpServerRequest.HttpServerRequest,
  (request) => {
    const params = new URL(request.originalUrl, "http://localhost").searchParams
    const errors: Array<Problem.ProblemFieldError> = []
    const text = params.get("limit")
    const limit = text === null ? defaultPageSize : Number(text)
    if (!Number.isInteger(limit) || limit < 1 || limit > maxPageSize) {
      errors.push({ path: "limit", message: `must be an integer from 1 to ${maxPageSize}` })
    }
    return { params, errors, limit }
  }
)

/**
 * A query parameter that must be one of `allowed`, if present (a field error otherwise).
 */
export const oneOf = <A extends string>(query: ListQuery, name: string, allowed: ReadonlyArray<A>): A | undefined => {
  const value = query.params.get(name)
  if (value === null) return undefined
  if ((allowed as ReadonlyArray<string>).includes(value)) return value as A
  query.errors.push({ path: name, message: `must be one of ${allowed.join(", ")}` })
  return undefined
}

const utf8 = new TextEncoder()
const fromUtf8 = new TextDecoder("utf-8", { fatal: true })

/** Base64url of the text's UTF-8, unpadded. */
const encode = (text: string): string =>
  btoa(String.fromCharCode(...utf8.encode(text)))
    .replaceAll("+", "-")
    .replaceAll("/", "_")
    .replaceAll("=", "")

const decode = (cursor: string): string | undefined => {
  try {
    return fromUtf8.decode(
      Uint8Array.from(atob(cursor.replaceAll("-", "+").replaceAll("_", "/")), (c) => c.charCodeAt(0))
    )
  } catch {
    return undefined
  }
}

/**
 * The cursor after a row ordered by a time and an id.
 */
export const encodeTimeCursor = (at: number, id: string): string => encode(`${at}:${id}`)

/**
 * The `cursor` parameter as a time and an id, if present (a field error if it is not one).
 */
export const timeCursor = (query: ListQuery): Option.Option<{ readonly at: number; readonly id: string }> => {
  const text = query.params.get("cursor")
  if (text === null) return Option.none()
  const decoded = decode(text)
  const colon = decoded?.indexOf(":") ?? -1
  const at = colon > 0 ? Number(decoded!.slice(0, colon)) : Number.NaN
  if (decoded === undefined || !Number.isSafeInteger(at) || colon === decoded.length - 1) {
    query.errors.push({ path: "cursor", message: "is not a cursor from this API" })
    return Option.none()
  }
  return Option.some({ at, id: decoded.slice(colon + 1) })
}

/**
 * The cursor after a row ordered by a text key (an account id).
 */
export const encodeTextCursor = (key: string): string => encode(key)

/**
 * The `cursor` parameter as a text key, if present (a field error if it is not one).
 */
export const textCursor = (query: ListQuery): Option.Option<string> => {
  const text = query.params.get("cursor")
  if (text === null) return Option.none()
  const decoded = decode(text)
  if (decoded === undefined || decoded.length === 0) {
    query.errors.push({ path: "cursor", message: "is not a cursor from this API" })
    return Option.none()
  }
  return Option.some(decoded)
}

/**
 * A page from `limit + 1` rows read: the first `limit`, and the cursor after the last of them when
 * there were more.
 */
export const pageOf = <A, B>(
  rows: ReadonlyArray<A>,
  limit: number,
  view: (row: A) => B,
  cursorAfter: (row: A) => string
): { readonly data: ReadonlyArray<B>; readonly nextCursor: string | null } => {
  const data = rows.slice(0, limit)
  return { data: data.map(view), nextCursor: rows.length > limit ? cursorAfter(data[data.length - 1]!) : null }
}
