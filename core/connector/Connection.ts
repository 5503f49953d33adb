/**
 * Connection configuration (spec "Connection configuration", "Connection revision lifecycle",
 * "Limits"; docs/decisions.md "Secret handling", "Public endpoints"): a workspace administrator
 * registers the one endpoint and the two secrets, and every registration becomes a new pending
 * revision.
 *
 * Rules: the endpoint must pass `validateEndpoint` (public `https`, no credentials, query or
 * fragment, every resolved address public); each secret has at least 32 characters, and the two
 * differ ("the completion secret ... independent of the action signing secret"). Secrets are
 * `Redacted` throughout, sealed in the `SecretVault` under the new revision's references, and never
 * appear in the connection row, an error, an audit entry or a log line.
 *
 * Writes: the revision row first, then both secrets, then the audit entry, in one `Transactor`
 * transaction. On SQL they commit together; where a store cannot join the transaction, that order
 * means an interruption leaves at most a revision without (both) secrets, never a secret without a
 * revision: such a revision can never pass a check (`secrets_missing`), is superseded by the next
 * registration, and is then retired as an orphan by the retirement sweep with its own audit entry
 * (`ConnectionMaintenance`).
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { randomUuid } from "../protocol/Uuid.ts"
import { ConnectionStore } from "../ports/ConnectionStore.ts"
import type { Crypto } from "../ports/Crypto.ts"
import { connectorSecretRef, SecretVault } from "../ports/SecretVault.ts"
import type { ConnectorSecrets } from "../protocol/Signing.ts"
import type { StorageError } from "../ports/StorageError.ts"
import { Transactor } from "../ports/Transactor.ts"
import { FieldIssue } from "../protocol/Json.ts"
import { endpointHost } from "./ConnectionCheck.ts"
import { type EndpointPolicy, type Resolver, validateEndpoint } from "./Endpoint.ts"

/**
 * "At least 32 characters" (spec "Limits"); characters are Unicode code points.
 */
export const minSecretLength = 32

/**
 * An upper bound the spec leaves open, so a secret is a secret and not a document.
 */
export const maxSecretLength = 512

/**
 * The registration was refused by a rule. `problem` is a stable code: an endpoint code from
 * `validateEndpoint` (`not_https`, `credentials`, `query`, `fragment`, `private_address`,
 * `unresolvable`, `invalid_url`, ...) or `secret_too_short`, `secret_too_long`,
 * `secret_whitespace` (leading or trailing whitespace, or a control character), `secrets_not_distinct`.
 * `errors` names every failing field, never its value.
 */
export class RegistrationRejected extends Schema.TaggedError<RegistrationRejected>()("RegistrationRejected", {
  problem: Schema.String,
  detail: Schema.String,
  errors: Schema.Array(FieldIssue)
}) {
  override get message(): string {
    return `${this.problem}: ${this.detail}`
  }
}

/**
 * A connector registration as `PUT /connector` takes it: the workspace, the endpoint and both
 * secrets.
 */
export interface Registration {
  readonly workspaceId: string
  readonly endpoint: string
  readonly secrets: ConnectorSecrets
}

/** The pending revision a registration created. */
export interface Registered {
  readonly connectionId: string
  readonly revision: number
  readonly state: "pending"
}

/**
 * Why a secret pair was refused (too short, equal secrets), with the field it concerns; never the
 * value.
 */
export interface SecretIssue {
  readonly problem: string
  readonly issue: FieldIssue
}

const secretFields = { actionSigning: "actionSigningSecret", completion: "completionSecret" } as const

// Whitespace at either end or any control character: almost always a copy-paste accident (a
// trailing newline), which would otherwise surface much later as a failing signature.
const badCharacters = /^\s|\s$|[\u0000-\u001f\u007f-\u009f]/

/**
 * Every secret rule a pair of secrets breaks, in a fixed order; empty when both are acceptable.
 */
export const secretIssues = (secrets: ConnectorSecrets): ReadonlyArray<SecretIssue> => {
  const issues: Array<SecretIssue> = []
  for (const name of ["actionSigning", "completion"] as const) {
    const value = Redacted.value(secrets[name])
    const length = [...value].length
    const path = secretFields[name]
    if (length < minSecretLength) {
      issues.push({
        problem: "secret_too_short",
        issue: { path, message: `must be at least ${minSecretLength} characters` }
      })
    } else if (length > maxSecretLength) {
      issues.push({
        problem: "secret_too_long",
        issue: { path, message: `must be at most ${maxSecretLength} characters` }
      })
    } else if (badCharacters.test(value)) {
      issues.push({
        problem: "secret_whitespace",
        issue: { path, message: "must not start or end with whitespace or contain control characters" }
      })
    }
  }
  if (Redacted.value(secrets.actionSigning) === Redacted.value(secrets.completion)) {
    issues.push({
      problem: "secrets_not_distinct",
      issue: { path: secretFields.completion, message: "must differ from actionSigningSecret" }
    })
  }
  return issues
}

/**
 * `PUT /connector`: validates the endpoint and the secrets, then stores a new pending revision with
 * its secrets (see the module documentation for the order of the writes).
 */
export const register = (
  registration: Registration,
  policy: EndpointPolicy
): Effect.Effect<
  Registered,
  RegistrationRejected | StorageError,
  ConnectionStore | SecretVault | Transactor | Crypto | Resolver
> =>
  Effect.gen(function* () {
    const issues = secretIssues(registration.secrets)
    const endpoint = yield* Effect.either(validateEndpoint(registration.endpoint, policy))
    if (endpoint._tag === "Left") {
      return yield* new RegistrationRejected({
        problem: endpoint.left.problem,
        detail: endpoint.left.detail,
        errors: [{ path: "endpoint", message: endpoint.left.detail }, ...issues.map((i) => i.issue)]
      })
    }
    if (issues.length > 0) {
      return yield* new RegistrationRejected({
        problem: issues[0]!.problem,
        detail: "the connector secrets do not meet the rules",
        errors: issues.map((i) => i.issue)
      })
    }

    const store = yield* ConnectionStore
    const vault = yield* SecretVault
    const now = yield* Clock.currentTimeMillis
    const newConnectionId = yield* randomUuid
    const url = registration.endpoint
    return yield* (yield* Transactor).withTransaction(
      Effect.gen(function* () {
        const { connectionId, revision } = yield* store.registerRevision({
          workspaceId: registration.workspaceId,
          connectionId: newConnectionId,
          endpoint: url,
          now
        })
        yield* vault.put(
          connectorSecretRef(connectionId, revision, "actionSigning"),
          registration.secrets.actionSigning,
          now
        )
        yield* vault.put(connectorSecretRef(connectionId, revision, "completion"), registration.secrets.completion, now)
        yield* store.appendAudit(connectionId, {
          at: now,
          revision,
          event: "registered",
          detail: { endpointHost: endpointHost(url) }
        })
        return { connectionId, revision, state: "pending" } as const
      })
    )
  })
