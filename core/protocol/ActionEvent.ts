/**
 * How a Direct API event names the connector action it reports on: the binding between a backend
 * event and exactly one action request, shared by the event's writer (the server SDK's
 * feature-access helper, `core/ingest/FeatureAccess.ts`) and its reader (the evidence the service
 * observes, `core/connector/ObservedEvidence.ts`).
 *
 * An event names an action in either of two ways (docs/decisions.md, "Evidence bound to one
 * action"):
 *
 * - the property `action_request_id` holds the action's `actionRequestId`;
 * - its `event_id` is `<event_name>:<actionRequestId>:<key>` (or `<event_name>:<actionRequestId>`),
 *   the form the SDK writes for `entitlement_active` (`entitlement_active:<actionRequestId>:<featureKey>`).
 *
 * Ids compare in any letter case (UUIDs, RFC 9562). An event that names two different actions
 * names both, so it is evidence for neither.
 */
import * as Option from "effect/Option"
import { canonicalUuid } from "./Uuid.ts"

/**
 * The event property naming the action an event reports on.
 */
export const actionRequestIdProperty = "action_request_id"

/**
 * The retry identity of an event reporting on one action: `<eventName>:<actionRequestId>:<key>`,
 * stable across retries of that event and distinct per action.
 */
export const actionEventId = (eventName: string, actionRequestId: string, key: string): string =>
  `${eventName}:${actionRequestId}:${key}`

/**
 * The action ids (lower case, without repeats) an event names; empty when it names none.
 */
export const actionsNamedBy = (event: {
  readonly eventId: string | null
  readonly eventName: string
  readonly properties: Readonly<Record<string, unknown>>
}): ReadonlyArray<string> => {
  const named: Array<string> = []
  const property = event.properties[actionRequestIdProperty]
  if (typeof property === "string") named.push(property.toLowerCase())
  const [name, id] = (event.eventId ?? "").split(":", 2)
  const fromEventId = name === event.eventName ? canonicalUuid(id) : Option.none()
  if (Option.isSome(fromEventId)) named.push(fromEventId.value)
  return [...new Set(named)]
}
