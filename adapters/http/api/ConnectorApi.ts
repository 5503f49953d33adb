/**
 * Connect the action backend (the customer action connector) and check the connection, under
 * `/api/admin/v1/workspaces/{workspaceId}`: register (admin keys), check (admin keys) and read
 * (admin or developer:read keys). Handled by `routes/Connector.ts`; secrets are never answered.
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { adminGuarded, adminPath, bodyProblems, declaring, Timestamp, UuidText } from "./Common.ts"

/**
 * `PUT /connector` body as documented (the route decodes the secrets as `Redacted` values).
 */
export const RegisterConnectorDocument = Schema.Struct({
  endpoint: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(2048)).annotations({
    description: "the customer kit's connector URL (https)"
  }),
  actionSigningSecret: Schema.String.annotations({
    description: "signs the actions Accord sends; never answered again"
  }),
  completionSecret: Schema.String.annotations({
    description: "signs the completions the customer sends; never answered again"
  })
}).annotations({
  examples: [
    {
      endpoint: "https://billing.example.com/accord/connector",
      actionSigningSecret: "as_replace_with_32_to_512_random_characters",
      completionSecret: "cs_replace_with_another_32_to_512_random_characters"
    }
  ]
})

const revisionState = Schema.String.annotations({ description: "pending, active or retired" })

export const registerConnector = HttpApiEndpoint.put("registerConnector", "/connector")
  .setPath(adminPath({}))
  .setPayload(RegisterConnectorDocument)
  .addSuccess(
    Schema.Struct({ connectionId: UuidText, revision: Schema.Int, state: Schema.Literal("pending") }).annotations({
      examples: [{ connectionId: "c0ffee00-1234-4abc-8def-0123456789ab", revision: 1, state: "pending" as const }]
    }),
    { status: 201 }
  )
  .addError(bodyProblems[0])
  .addError(bodyProblems[1])
  .addError(bodyProblems[2])
  .pipe(declaring("RegistrationRejected"))
  .annotate(OpenApi.Summary, "Register the connector endpoint and its two secrets as a new pending revision")

export const checkConnector = HttpApiEndpoint.post("checkConnector", "/connector/check")
  .setPath(adminPath({}))
  .addSuccess(
    Schema.Struct({
      connectionId: UuidText,
      revision: Schema.Int,
      state: revisionState,
      paymentModes: Schema.Array(Schema.String),
      problem: Schema.optional(
        Schema.String.annotations({
          description:
            "why the check failed (e.g. timeout, endpoint_refused, invalid_signature); `state` is then unchanged"
        })
      )
    }).annotations({
      examples: [
        { connectionId: "c0ffee00-1234-4abc-8def-0123456789ab", revision: 1, state: "active", paymentModes: [] }
      ]
    })
  )
  .pipe(declaring("ConnectorNotConfigured"))
  .annotate(
    OpenApi.Summary,
    "Check payment connection: the signed handshake for the pending revision, else the active one"
  )

export const getConnector = HttpApiEndpoint.get("getConnector", "/connector")
  .setPath(adminPath({}))
  .addSuccess(
    Schema.Struct({
      connectionId: UuidText,
      endpointHost: Schema.NullOr(Schema.String),
      activeRevision: Schema.NullOr(Schema.Int),
      pendingRevision: Schema.NullOr(Schema.Int),
      revisions: Schema.Array(
        Schema.Struct({
          revision: Schema.Int,
          state: revisionState,
          endpointHost: Schema.String,
          createdAt: Timestamp,
          activatedAt: Schema.NullOr(Timestamp),
          retiredAt: Schema.NullOr(Timestamp)
        })
      ),
      paymentCapabilities: Schema.NullOr(
        Schema.Struct({
          revision: Schema.Int,
          modes: Schema.Array(Schema.String),
          livemode: Schema.Boolean,
          connectedAccountReferenceHash: Schema.String,
          providerConnectionGeneration: Schema.Unknown,
          responseFingerprint: Schema.String,
          recordedAt: Timestamp,
          expiresAt: Timestamp
        })
      ),
      lastCheck: Schema.NullOr(
        Schema.Struct({
          revision: Schema.Int,
          at: Timestamp,
          outcome: Schema.String,
          problem: Schema.NullOr(Schema.String)
        })
      )
    }).annotations({
      examples: [
        {
          connectionId: "c0ffee00-1234-4abc-8def-0123456789ab",
          endpointHost: "billing.example.com",
          activeRevision: 1,
          pendingRevision: null,
          revisions: [
            {
              revision: 1,
              state: "active",
              endpointHost: "billing.example.com",
              createdAt: "2026-11-22T10:00:00.000Z",
              activatedAt: "2026-11-22T10:01:00.000Z",
              retiredAt: null
            }
          ],
          paymentCapabilities: null,
          lastCheck: { revision: 1, at: "2026-11-22T10:01:00.000Z", outcome: "succeeded", problem: null }
        }
      ]
    })
  )
  .pipe(declaring("ConnectorNotConfigured"))
  .annotate(
    OpenApi.Summary,
    "The connector: endpoint host, revisions, payment capabilities and the last check (never a secret or a full URL)"
  )

export const group = HttpApiGroup.make("connector")
  .add(registerConnector)
  .add(checkConnector)
  .add(getConnector)
  .pipe(adminGuarded)
  .annotate(OpenApi.Title, "Connector")
  .annotate(
    OpenApi.Description,
    "The backend that executes every signed action (Setup > Connect the action backend, then Check connection in the console). Registering and checking need an admin key; the read takes admin or developer:read keys."
  )
