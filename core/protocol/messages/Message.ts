/**
 * The `type` of every connector message body. "They are sent to the same URL, and the message
 * `type` identifies each call." Derived from the body schemas, so there is one copy of each string.
 */
import * as Schema from "effect/Schema"
import { AcceptedAck } from "./Acknowledgement.ts"
import { Completion } from "./Completion.ts"
import { ExecutionRequest } from "./Execution.ts"
import { HandshakeAck, HandshakeRequest } from "./Handshake.ts"
import { PaymentObservation, PaymentReconciliationRequest } from "./Reconciliation.ts"

/**
 * The `type` of every connector message: handshake, execution, acknowledgement, reconciliation and
 * completion.
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

/** {@inheritDoc MessageType:var} */
export type MessageType = typeof MessageType.Type
