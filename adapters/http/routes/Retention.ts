/**
 * Event retention of a workspace, relative to `/api/admin/v1/workspaces/{workspaceId}` (admin keys
 * only): `GET /retention` answers the retention that applies (the workspace's own, else the
 * server's default) and `PUT /retention` sets the workspace's own (`core/ingest/Retention.ts`).
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as Effect from "effect/Effect"
import { defaultRetentionDays, effectiveRetention } from "../../../core/ingest/Retention.ts"
import type { ApiKeyStore } from "../../../core/ports/ApiKeyStore.ts"
import type { Crypto } from "../../../core/ports/Crypto.ts"
import { EventStore, type Retention } from "../../../core/ports/EventStore.ts"
import { jsonResponse as json } from "../Answer.ts"
import { adminOnly, guarded } from "../Auth.ts"
import { readJson } from "../Body.ts"
import * as Api from "../api/Api.ts"
import * as RetentionApi from "../api/RetentionApi.ts"

/** What the retention routes need. */
export type RetentionServices = ApiKeyStore | Crypto | EventStore

/** The settings the retention routes are served with. */
export interface RetentionRouteOptions {
  /** The retention of a workspace that set none (`ACCORD_EVENT_RETENTION_DAYS`; 400 days when absent). */
  readonly eventRetention?: Retention
}

/** Fixed wording for its field errors, so that none can echo a received value. */
const setRetentionMessages = {
  "": "must be a JSON object",
  retentionDays: "must be a whole number of days from 1 to 36500, or null to keep events forever"
}

const view = ({ own, retention }: { readonly retention: Retention; readonly own: boolean }) => ({
  retentionDays: retention === "forever" ? null : retention,
  source: own ? "workspace" : "server"
})

const getRetention = (serverDefault: Retention) => (workspaceId: string) =>
  Effect.map(effectiveRetention(workspaceId, serverDefault), (found) => json(view(found)))

const setRetention = (serverDefault: Retention, maxBodyBytes: number) => (workspaceId: string) =>
  Effect.gen(function* () {
    const body = yield* readJson(RetentionApi.SetRetentionBody, maxBodyBytes, setRetentionMessages)
    const now = yield* Effect.clockWith((clock) => clock.currentTimeMillis)
    yield* (yield* EventStore).setRetention(workspaceId, body.retentionDays ?? "forever", now)
    return json(view(yield* effectiveRetention(workspaceId, serverDefault)))
  })

/**
 * The group's handlers, bound to the declaration (`api/RetentionApi.ts`).
 */
export const group = (options: RetentionRouteOptions & { readonly maxBodyBytes: number }) => {
  const serverDefault = options.eventRetention ?? defaultRetentionDays
  return HttpApiBuilder.group(Api.api, "retention", (handlers) =>
    handlers
      .handleRaw("getRetention", () => guarded(adminOnly)(getRetention(serverDefault)))
      .handleRaw("setRetention", () => guarded(adminOnly)(setRetention(serverDefault, options.maxBodyBytes)))
  )
}
