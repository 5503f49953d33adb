/**
 * The `type` of every connector message body. "They are sent to the same URL, and the message
 * `type` identifies each call." Derived from the body schemas, so there is one copy of each string.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { AcceptedAck } from "./Acknowledgement.ts"
import { Completion } from "./Completion.ts"
import { ExecutionRequest } from "./Execution.ts"
import { HandshakeAck, HandshakeRequest } from "./Handshake.ts"
import { PaymentObservation, PaymentReconciliationRequest } from "./Reconciliation.ts"

/**
 * @since 0.1.0
 */
export const MessageType = Schema.Literal(
  ...HandshakeRequest.fields.type.literals,
  ...HandshakeAck.fields.type.literals,
  ...ExecutionRequest.fields.type.literals,
  ...AcceptedAck.fields.type.literals,
  ...PaymentReconciliationRequest.from.fields.type.literals,
  ...PaymentObservation.from.fields.type.literals,
  ...Completion.fields.type.literals
)

/**
 * @since 0.1.0
 */
export type MessageType = typeof MessageType.Type
