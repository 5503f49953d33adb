/**
 * Erasure and export, relative to `/api/admin/v1/workspaces/{workspaceId}` (admin keys only):
 * `DELETE /accounts/{accountId}` and `DELETE /users/{userId}` erase the subject and answer its
 * suppression (`core/privacy/Erasure.ts`; 409 while its actions are in flight);
 * `GET /suppressions` lists the erased subjects with their audit, newest first, paged;
 * `GET /accounts/{accountId}/export` streams everything held about the account as NDJSON
 * (`core/privacy/Export.ts`), chunked as it is read, never buffered whole.
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import type { ApiKeyRecord, ApiKeyStore } from "../../../core/ports/ApiKeyStore.ts"
import type { Crypto } from "../../../core/ports/Crypto.ts"
import type { StoredEvent } from "../../../core/ports/EventStore.ts"
import {
  type Subject,
  type SubjectKind,
  type Suppression,
  SuppressionStore
} from "../../../core/ports/SuppressionStore.ts"
import { erase, type ErasureServices } from "../../../core/privacy/Erasure.ts"
import { type ExportRecord, exportAccount, type ExportServices } from "../../../core/privacy/Export.ts"
import { formatTimestamp } from "../../../core/protocol/Timestamp.ts"
import { jsonResponse as json } from "../Answer.ts"
import { adminOnly, guarded, guardedAs } from "../Auth.ts"
import { encodeTimeCursor, listQuery, pageOf, timeCursor, validQuery } from "../Paging.ts"
import * as Api from "../api/Api.ts"

/** What the erasure and export routes need. */
export type PrivacyServices = ApiKeyStore | Crypto | SuppressionStore | ErasureServices | ExportServices

/** A suppression as answered (`PrivacyApi.SuppressionView`). */
export const suppressionView = (s: Suppression) => ({
  subject: s.subject,
  createdAt: formatTimestamp(s.createdAt),
  createdBy: s.createdBy,
  lastErasedAt: formatTimestamp(s.lastErasedAt),
  lastErasedBy: s.lastErasedBy,
  removed: s.removed
})

const eraseSubject = (subject: Subject) => (workspaceId: string, key: ApiKeyRecord) =>
  Effect.map(erase({ workspaceId, subject, by: `api_key:${key.id}` }), (suppression) =>
    json(suppressionView(suppression))
  )

// A suppression's cursor: its creation time, then its kind and id (`kind/id`; a kind has no `/`).
const listSuppressions = (workspaceId: string) =>
  Effect.gen(function* () {
    const query = yield* listQuery
    const cursor = timeCursor(query)
    yield* validQuery(query)
    const after = Option.flatMap(cursor, ({ at, id }) => {
      const slash = id.indexOf("/")
      const kind = id.slice(0, slash)
      return kind === "account" || kind === "user"
        ? Option.some({ createdAt: at, kind: kind as SubjectKind, id: id.slice(slash + 1) })
        : Option.none()
    })
    const rows = yield* (yield* SuppressionStore).list({
      workspaceId,
      limit: query.limit + 1,
      ...(Option.isSome(after) ? { after: after.value } : {})
    })
    return json(
      pageOf(rows, query.limit, suppressionView, (s) =>
        encodeTimeCursor(s.createdAt, `${s.subject.kind}/${s.subject.id}`)
      )
    )
  })

/** An event as the Events view answers it: as sent, with Accord's `id` and `received_at`. */
const eventView = (event: StoredEvent) => ({
  id: event.id,
  received_at: formatTimestamp(event.receivedAt),
  ...(event.body as object)
})

const exportLine = (record: ExportRecord): unknown => {
  switch (record.kind) {
    case "event":
      return { kind: "event", ...eventView(record.event) }
    case "action":
      return {
        kind: "action",
        ...record.action,
        createdAt: formatTimestamp(record.action.createdAt),
        updatedAt: formatTimestamp(record.action.updatedAt),
        history: record.history
      }
    default:
      return record
  }
}

const encoder = new TextEncoder()

const exportRoute = (accountId: string) => (workspaceId: string) =>
  Effect.map(Effect.context<ExportServices>(), (context) =>
    HttpServerResponse.stream(
      exportAccount(workspaceId, accountId).pipe(
        Stream.map((record) => encoder.encode(`${JSON.stringify(exportLine(record))}\n`)),
        Stream.provideContext(context)
      ),
      { contentType: "application/x-ndjson", headers: { "cache-control": "no-store" } }
    )
  )

/**
 * The group's handlers, bound to the declaration (`api/PrivacyApi.ts`); admin keys only.
 */
export const group = HttpApiBuilder.group(Api.api, "privacy", (handlers) =>
  handlers
    .handleRaw("eraseAccount", ({ path }) =>
      guardedAs(adminOnly)(eraseSubject({ kind: "account", id: path.accountId }))
    )
    .handleRaw("eraseUser", ({ path }) => guardedAs(adminOnly)(eraseSubject({ kind: "user", id: path.userId })))
    .handleRaw("listSuppressions", () => guarded(adminOnly)(listSuppressions))
    .handleRaw("exportAccount", ({ path }) => guarded(adminOnly)(exportRoute(path.accountId)))
)
