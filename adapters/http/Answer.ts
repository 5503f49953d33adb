/**
 * A JSON answer as plain data: status, headers and a body to serialize. Routes build answers;
 * whichever server sends them (the platform app through `toResponse`, or the `node:http` fast path
 * of `NodeIngest`) writes exactly the same status, headers and JSON.
 *
 * Every answer carries `cache-control: no-store`: answers hold account data, keys or problems,
 * none of which a cache should keep.
 */
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"

/**
 * A complete HTTP answer as plain data (status, lowercase headers, body bytes), written to the
 * response by the edge that serves it.
 */
export interface Answer {
  readonly status: number
  /** Lowercase header names; `content-type` is always present. */
  readonly headers: Readonly<Record<string, string>>
  /** Serialized with `JSON.stringify`. */
  readonly body: unknown
}

/**
 * An `application/json` answer.
 */
export const json = (body: unknown, status = 200, contentType = "application/json"): Answer => ({
  status,
  headers: { "content-type": contentType, "cache-control": "no-store" },
  body
})

/**
 * The answer as a platform response.
 */
export const toResponse = (answer: Answer): HttpServerResponse.HttpServerResponse => {
  const { "content-type": contentType, ...headers } = answer.headers
  return HttpServerResponse.unsafeJson(answer.body, { status: answer.status, contentType, headers })
}

/**
 * An `application/json` platform response (`toResponse(json(body, status))`).
 */
export const jsonResponse = (body: unknown, status = 200): HttpServerResponse.HttpServerResponse =>
  toResponse(json(body, status))
