/**
 * The execution acknowledgement (spec "Execution acknowledgement body"). "A signed `accepted`
 * acknowledgement means only that the customer backend durably recorded the request and owns it
 * under the provider idempotency key."
 */
import * as Schema from "effect/Schema"
import { Code, ExactStruct, Nonce, ProtocolVersion, ProviderIdempotencyKey, ProviderReference } from "./Common.ts"
import { Uuid } from "../Uuid.ts"
import { PaymentContinuation } from "./Continuation.ts"

/** The fields both acknowledgement states carry: the echoed bindings and the nonce answered. */
const echoedFields = {
  type: Schema.Literal("service.customer_action.ack"),
  protocolVersion: ProtocolVersion,
  workspaceId: Uuid,
  actionRequestId: Uuid,
  providerIdempotencyKey: ProviderIdempotencyKey,
  requestNonce: Nonce,
  providerReference: Schema.optionalWith(ProviderReference, { exact: true })
}

/**
 * `state: accepted`. "`continuation`: optional object, allowed only with `accepted`"; an
 * `errorCode` here is an unknown field, so the acknowledgement is invalid.
 */
export const AcceptedAck = ExactStruct({
  ...echoedFields,
  state: Schema.Literal("accepted"),
  continuation: Schema.optionalWith(PaymentContinuation, { exact: true })
}).annotations({ identifier: "AcceptedAck" })

/** {@inheritDoc AcceptedAck:var} */
export interface AcceptedAck extends Schema.Schema.Type<typeof AcceptedAck> {}

/**
 * `state: rejected`. "`errorCode`: optional bounded string, allowed only with `rejected`";
 * "Continuation with state `rejected`: invalid".
 */
export const RejectedAck = ExactStruct({
  ...echoedFields,
  state: Schema.Literal("rejected"),
  errorCode: Schema.optionalWith(Code, { exact: true })
}).annotations({ identifier: "RejectedAck" })

/** {@inheritDoc RejectedAck:var} */
export interface RejectedAck extends Schema.Schema.Type<typeof RejectedAck> {}

/**
 * The acknowledgement body. "An acknowledgement with unknown fields, or with an invalid
 * continuation, is rejected as an invalid response." Decoding it checks the continuation's expiry
 * against the `Clock`, so use the Effect form (`Schema.decodeUnknown`).
 */
export const Acknowledgement: Schema.Union<[typeof AcceptedAck, typeof RejectedAck]> = Schema.Union(
  AcceptedAck,
  RejectedAck
)

export type Acknowledgement = AcceptedAck | RejectedAck
