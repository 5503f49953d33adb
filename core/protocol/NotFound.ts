/**
 * A lookup that found nothing the caller may see: an unknown id, or one of another workspace or
 * session, which is answered exactly as an unknown one (its existence is not disclosed).
 */
import * as Schema from "effect/Schema"

/**
 * What was looked up.
 */
export const NotFoundResource = Schema.Literal(
  "api_key",
  "runtime_session",
  "approval_token",
  "action_request",
  "session_action_request",
  "account",
  "feature_gate",
  "catalog_version",
  "import"
)

export type NotFoundResource = typeof NotFoundResource.Type

/**
 * The looked-up resource does not exist (or is not the caller's); answered as 404 naming only the
 * kind of resource.
 */
export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", { resource: NotFoundResource }) {
  override get message(): string {
    return `no such ${this.resource}`
  }
}
