/**
 * Request bodies as raw bytes with a size limit, and JSON bodies decoded once at the edge.
 *
 * Bytes, never text (docs/decisions.md, "Raw body bytes"): web runtimes' `text()` strips a UTF-8
 * byte-order mark, and signatures are computed over the bytes as received. The limit is checked
 * against `Content-Length` before anything is read, and again while reading, since a chunked body
 * declares no length.
 *
 * An oversized body is still read (and discarded) up to `drainBytes` past the limit before the 413
 * is sent: stopping early makes Node destroy the socket, and the client would see a reset instead
 * of the answer. Past that allowance the connection is dropped.
 */
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as ParseResult from "effect/ParseResult"
import type * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as FastDecode from "../../core/protocol/FastDecode.ts"
import { exactParseOptions } from "../../core/protocol/messages/Common.ts"
import { isJsonContentType, parseJsonBody, toFieldIssues } from "../../core/protocol/Json.ts"
import { malformedBody } from "./ErrorMap.ts"
import * as Problem from "./Problem.ts"

/**
 * How far past the limit an oversized body is drained so the 413 reaches the client.
 */
export const drainBytes: number = 1024 * 1024

/**
 * 400: the connection failed while the body was being read.
 */
export const unreadable: Problem.Problem = Problem.badRequest("unreadable_body", "the request body could not be read")

/**
 * 415: a JSON route's body is not `application/json`.
 */
export const notJson: Problem.Problem = Problem.unsupportedMediaType("application/json")

/**
 * The body length a `Content-Length` header declares, if it is a plain decimal number.
 */
export const declaredLength = (header: string | undefined): number | undefined =>
  header !== undefined && /^\d+$/.test(header.trim()) ? Number(header.trim()) : undefined

/**
 * One body being read in chunks, whichever stream delivers them (the platform's request stream, a
 * `node:http` request's events): the chunks within `maxBytes` are kept, and past it the rest is
 * only counted, up to `drainBytes`, so the 413 reaches the client.
 */
export interface LimitedBody {
  /** Takes the next chunk; `false` once the body is more than `drainBytes` past the limit: stop reading. */
  readonly add: (chunk: Uint8Array) => boolean
  /** The body read so far, or 413 `content_too_large` when it went past the limit. */
  readonly result: () => Exit.Exit<Uint8Array, Problem.Problem>
}

class Chunks implements LimitedBody {
  private readonly chunks: Array<Uint8Array> = []
  private received = 0
  constructor(private readonly maxBytes: number) {}
  readonly add = (chunk: Uint8Array): boolean => {
    this.received += chunk.length
    if (this.received <= this.maxBytes) this.chunks.push(chunk)
    return this.received <= this.maxBytes + drainBytes
  }
  readonly result = (): Exit.Exit<Uint8Array, Problem.Problem> => {
    if (this.received > this.maxBytes) return Exit.fail(Problem.contentTooLarge(this.maxBytes))
    // One chunk (a small body, the common case) is the body itself.
    if (this.chunks.length === 1) return Exit.succeed(this.chunks[0]!)
    const body = new Uint8Array(this.received)
    let offset = 0
    for (const chunk of this.chunks) {
      body.set(chunk, offset)
      offset += chunk.length
    }
    return Exit.succeed(body)
  }
}

/**
 * A body of at most `maxBytes` to read in chunks.
 */
export const limitedBody = (maxBytes: number): LimitedBody => new Chunks(maxBytes)

/**
 * Whether a `Content-Length` header declares more than `maxBytes`: such a body is refused at once.
 */
export const declaresTooMuch = (header: string | undefined, maxBytes: number): boolean => {
  const declared = declaredLength(header)
  return declared !== undefined && declared > maxBytes
}

/**
 * The part of a `node:http` request (`IncomingMessage`) a body is read from.
 */
export interface NodeRequest {
  readonly headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>
  readonly readableEnded: boolean
  /** Listens to the request's events. */
  readonly on: (event: string, listener: (...args: ReadonlyArray<any>) => void) => unknown
  /** Stops listening to the request's events. */
  readonly off: (event: string, listener: (...args: ReadonlyArray<any>) => void) => unknown
}

/** Whether a platform request's source is a `node:http` request (Node and Deno), read by its events. */
const isNodeRequest = (source: unknown): source is NodeRequest =>
  typeof source === "object" &&
  source !== null &&
  typeof (source as { on?: unknown }).on === "function" &&
  typeof (source as { off?: unknown }).off === "function" &&
  typeof (source as { readableEnded?: unknown }).readableEnded === "boolean"

/**
 * Reads a `node:http` request's body with the limits of `readBytes` (`limitedBody`) and calls back
 * once: a declared length over `maxBytes` is refused at once; otherwise the body is read, and past
 * `maxBytes` the rest is drained (up to `drainBytes`) so the 413 reaches the client instead of a
 * reset. Reading stops by removing its listeners, never by destroying the request: that would
 * reset the connection before the answer is written (the server closes it after the answer,
 * reading what the client still sends: `NodeServer`). Returns the function that stops reading
 * (the client went away).
 */
export const readNodeBody = (
  request: NodeRequest,
  maxBytes: number,
  done: (body: Exit.Exit<Uint8Array, Problem.Problem>) => void
): (() => void) => {
  const none = () => {}
  if (declaresTooMuch(headerText(request.headers["content-length"]), maxBytes)) {
    done(Exit.fail(Problem.contentTooLarge(maxBytes)))
    return none
  }
  if (request.readableEnded) {
    done(Exit.fail(unreadable))
    return none
  }
  const body = limitedBody(maxBytes)
  const cleanup = () => {
    request.off("data", onData)
    request.off("end", onEnd)
    request.off("error", onError)
  }
  const onData = (chunk: Uint8Array) => {
    if (body.add(chunk)) return
    cleanup()
    done(body.result())
  }
  const onEnd = () => {
    cleanup()
    done(body.result())
  }
  const onError = () => {
    cleanup()
    done(Exit.fail(unreadable))
  }
  request.on("data", onData)
  request.on("end", onEnd)
  request.on("error", onError)
  return cleanup
}

/** A header's one value (a repeated header is not one). */
const headerText = (value: string | ReadonlyArray<string> | undefined): string | undefined =>
  typeof value === "string" ? value : undefined

/** A web `Request` without a body has no stream to read (the platform fails instead of ending). */
const hasNoWebBody = (request: HttpServerRequest.HttpServerRequest): boolean =>
  typeof Request !== "undefined" && request.source instanceof Request && request.source.body === null

/**
 * Reads the request body as bytes. Over `maxBytes`: 413 `content_too_large`.
 */
export const readBytes = (
  maxBytes: number
): Effect.Effect<Uint8Array, Problem.Problem, HttpServerRequest.HttpServerRequest> =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const declared = declaredLength(request.headers["content-length"])
    if (declared !== undefined && declared > maxBytes) return Effect.fail(Problem.contentTooLarge(maxBytes))
    if (declared === 0 || hasNoWebBody(request)) return Effect.succeed(new Uint8Array(0))
    const source = request.source
    if (isNodeRequest(source)) {
      return Effect.async<Uint8Array, Problem.Problem>((resume) => {
        const stop = readNodeBody(source, maxBytes, resume)
        return Effect.sync(stop)
      })
    }
    // Elsewhere (Bun, a web Request): a declared length within the limit is read in one piece.
    if (declared !== undefined) {
      return Effect.flatMap(
        Effect.mapError(request.arrayBuffer, () => unreadable),
        (buffer) =>
          buffer.byteLength > maxBytes
            ? Effect.fail(Problem.contentTooLarge(maxBytes))
            : Effect.succeed(new Uint8Array(buffer))
      )
    }
    return Effect.suspend(() => {
      const body = limitedBody(maxBytes)
      return request.stream.pipe(
        Stream.mapError(() => unreadable),
        Stream.runForEachWhile((chunk) => Effect.succeed(body.add(chunk))),
        Effect.flatMap(body.result)
      )
    })
  })

/**
 * Field errors without the received values, one per field path. Schema's default messages end in
 * `, actual <value>`, which errors must never echo (a misplaced secret would come straight back), so
 * they are cut there; `messages` gives fixed wording for known paths (`""` is the whole body).
 */
export const fieldErrors = (
  error: ParseResult.ParseError,
  messages: Readonly<Record<string, string>> = {}
): ReadonlyArray<Problem.ProblemFieldError> => toFieldIssues(error, messages)

/**
 * Reads a JSON body without decoding it: 415 when the content type is not JSON, 413 when too
 * large, 400 `malformed_json` when not UTF-8 JSON (a byte-order mark included), `duplicate_key` or
 * `unstorable_text` (`ErrorMap.malformedBody`).
 */
export const readJsonValue = (
  maxBytes: number
): Effect.Effect<unknown, Problem.Problem, HttpServerRequest.HttpServerRequest> =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    if (!isJsonContentType(request.headers["content-type"])) {
      return yield* Effect.fail(notJson)
    }
    const bytes = yield* readBytes(maxBytes)
    return yield* Effect.mapError(parseJsonBody(bytes), malformedBody)
  })

/**
 * Decodes a parsed JSON body with `schema` (unknown fields are errors): 400 `invalid_body` with
 * `errors` when the shape is wrong (`messages`: see `fieldErrors`).
 */
export const decodeJson = <A, I>(
  schema: Schema.Schema<A, I, never>,
  json: unknown,
  messages?: Readonly<Record<string, string>>
): Effect.Effect<A, Problem.Problem> =>
  Effect.mapError(FastDecode.decodeUnknown(schema, exactParseOptions)(json), (error) =>
    Problem.badRequest("invalid_body", "the request body has invalid fields", fieldErrors(error, messages))
  )

/**
 * Reads a JSON body (`readJsonValue`) and decodes it with `schema` (`decodeJson`).
 */
export const readJson = <A, I>(
  schema: Schema.Schema<A, I, never>,
  maxBytes: number,
  messages?: Readonly<Record<string, string>>
): Effect.Effect<A, Problem.Problem, HttpServerRequest.HttpServerRequest> =>
  Effect.flatMap(readJsonValue(maxBytes), (json) => decodeJson(schema, json, messages))
