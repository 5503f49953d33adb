/**
 * The Events view (spec "Settings > Integrations > Direct API and the Events view show it"):
 * `GET /events?account_id&event_name&from&to&cursor&limit`, newest first, cursor pagination,
 * relative to `/api/admin/v1/workspaces/{workspaceId}`; `admin` or `developer:read` keys.
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { ApiKeyStore } from "../../../core/ports/ApiKeyStore.ts"
import type { Crypto } from "../../../core/ports/Crypto.ts"
import { EventStore, type StoredEvent } from "../../../core/ports/EventStore.ts"
import { formatTimestamp, parseTimestamp } from "../../../core/protocol/Timestamp.ts"
import { jsonResponse as json } from "../Answer.ts"
import { adminOrDeveloper, guarded } from "../Auth.ts"
import { InvalidQuery } from "../Paging.ts"
import * as Api from "../api/Api.ts"
import * as Accounts from "./Accounts.ts"

/** What the Events view needs: key authentication and the event store. */
export type EventsServices = ApiKeyStore | Crypto | EventStore

/**
 * Page size bounds of `GET /events`.
 */
export const defaultPageSize = 50
/** The largest `limit` `GET /events` accepts. */
export const maxPageSize = 200

const eventView = (event: StoredEvent) => ({
  id: event.id,
  received_at: formatTimestamp(event.receivedAt),
  ...(event.body as object)
})

const encodeCursor = (event: StoredEvent): string => btoa(`${event.occurredAt}:${event.id}`).replaceAll("=", "")

const decodeCursor = (cursor: string): Option.Option<{ occurredAt: number; id: string }> => {
  try {
    const [at, id] = atob(cursor).split(":")
    const occurredAt = Number(at)
    return Number.isSafeInteger(occurredAt) && id !== undefined && id.length > 0
      ? Option.some({ occurredAt, id })
      : Option.none()
  } catch {
    return Option.none()
  }
}

const listEvents = (workspaceId: string) =>
  Effect.gen(function* () {
    // the original URL: under a prefixed router, `url` is cut by the prefix pattern's length
    const query = (yield* HttpServerRequest.HttpServerRequest).originalUrl
    const params = new URL(query, "http://localhost").searchParams
    const errors: Array<{ path: string; message: string }> = []
    const time = (name: string) => {
      const value = params.get(name)
      if (value === null) return undefined
      const parsed = parseTimestamp(value)
      if (parsed === undefined) errors.push({ path: name, message: "must be an RFC 3339 timestamp" })
      return parsed
    }
    const from = time("from")
    const to = time("to")
    const limitText = params.get("limit")
    const limit = limitText === null ? defaultPageSize : Number(limitText)
    if (!Number.isInteger(limit) || limit < 1 || limit > maxPageSize) {
      errors.push({ path: "limit", message: `must be an integer from 1 to ${maxPageSize}` })
    }
    const cursorText = params.get("cursor")
    const after = cursorText === null ? Option.none() : decodeCursor(cursorText)
    if (cursorText !== null && Option.isNone(after))
      errors.push({ path: "cursor", message: "is not a cursor from this API" })
    if (errors.length > 0) return yield* new InvalidQuery({ errors })
    const accountId = params.get("account_id")
    const eventName = params.get("event_name")
    const page = yield* (yield* EventStore).list({
      workspaceId,
      limit: limit + 1,
      ...(accountId !== null ? { accountId } : {}),
      ...(eventName !== null ? { eventName } : {}),
      ...(from !== undefined ? { from } : {}),
      ...(to !== undefined ? { to } : {}),
      ...(Option.isSome(after) ? { after: after.value } : {})
    })
    const data = page.slice(0, limit)
    return json({
      data: data.map(eventView),
      nextCursor: page.length > limit ? encodeCursor(data[data.length - 1]!) : null
    })
  })

/**
 * The group's handlers (the Events view and the account routes of `Accounts.ts`), bound to the
 * declaration (`api/EventsApi.ts`). Raw: the handler reads the query itself, after the guard.
 */
export const group = HttpApiBuilder.group(Api.api, "events", (handlers) =>
  handlers
    .handleRaw("listEvents", () => guarded(adminOrDeveloper)(listEvents))
    .handleRaw("listAccounts", () => Accounts.listAccountsRoute)
    .handleRaw("getAccount", () => Accounts.getAccountRoute)
)
