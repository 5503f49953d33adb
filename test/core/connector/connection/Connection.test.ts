/**
 * `PUT /connector` and `GET /connector` over real HTTP on loopback against real storage: who may
 * register (and call the other administrative connector and action routes), what the body must be, the secret rules, one new pending revision per registration,
 * and secrets stored sealed in the vault, never in the connection row, a response or a log line.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { assert } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { ConnectionStore } from "../../../../core/ports/ConnectionStore.ts"
import { connectorSecretRef, SecretVault } from "../../../../core/ports/SecretVault.ts"
import { warnIfSkipped } from "../../../support/postgres.ts"
import { intakeInput } from "../dispatch/support.ts"
import {
  actionSigningSecret,
  completionSecret,
  issueKey,
  kitPeer,
  onEachStorage,
  registerEndpoint,
  runCheck,
  send,
  showConnector,
  startService
} from "./support.ts"

warnIfSkipped("connector registration")

const endpoint = "http://127.0.0.1:9/accord/hook"
const body = { endpoint, actionSigningSecret, completionSecret }

onEachStorage("PUT /connector", { live: true }, (it) => {
  it.scoped("an admin key registers revision 0, pending; the secrets are not echoed", () =>
    Effect.gen(function* () {
      const service = yield* startService()
      const reply = yield* send(service.connectorUrl, "PUT", service.adminKey, body)
      assert.strictEqual(reply.status, 201)
      assert.deepStrictEqual(Object.keys(reply.json).sort(), ["connectionId", "revision", "state"])
      assert.strictEqual(reply.json.revision, 0)
      assert.strictEqual(reply.json.state, "pending")
      assert.match(reply.json.connectionId, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
      assert.notInclude(reply.text, actionSigningSecret)
      assert.notInclude(reply.text, completionSecret)
    })
  )

  it.scoped(
    "PUT /connector, POST /connector/check, POST /action-requests, GET /action-requests/{id}: ingest and developer:read keys and another workspace's admin get 403, a missing or unknown key 401",
    () =>
      Effect.gen(function* () {
        const service = yield* startService()
        const other = yield* startService()
        const ingest = yield* issueKey(service, "ingest")
        const read = yield* issueKey(service, "developer:read")
        const statuses = {
          ingest: (yield* send(service.connectorUrl, "PUT", ingest, body)).status,
          read: (yield* send(service.connectorUrl, "PUT", read, body)).status,
          missing: (yield* send(service.connectorUrl, "PUT", undefined, body)).status,
          unknown: (yield* send(service.connectorUrl, "PUT", "acc_admin_" + "x".repeat(43), body)).status,
          otherWorkspace: (yield* send(service.connectorUrl, "PUT", other.adminKey, body)).status,
          checkIngest: (yield* send(`${service.connectorUrl}/check`, "POST", ingest)).status,
          checkRead: (yield* send(`${service.connectorUrl}/check`, "POST", read)).status,
          checkMissing: (yield* send(`${service.connectorUrl}/check`, "POST", undefined)).status,
          checkOtherWorkspace: (yield* send(`${service.connectorUrl}/check`, "POST", other.adminKey)).status,
          showIngest: (yield* send(service.connectorUrl, "GET", ingest)).status,
          showMissing: (yield* send(service.connectorUrl, "GET", undefined)).status
        }
        assert.deepStrictEqual(statuses, {
          ingest: 403,
          read: 403,
          missing: 401,
          unknown: 401,
          otherWorkspace: 403,
          checkIngest: 403,
          checkRead: 403,
          checkMissing: 401,
          checkOtherWorkspace: 403,
          showIngest: 403,
          showMissing: 401
        })
        // Nothing was registered by any of them.
        assert.strictEqual((yield* showConnector(service)).status, 404)
        // A developer:read key may look at the connector.
        yield* registerEndpoint(service, yield* kitPeer(service.workspaceId))
        assert.strictEqual((yield* send(service.connectorUrl, "GET", read)).status, 200)

        // The action routes, with an active connection and an existing action, so that no refusal is
        // a 404 or a 409 in disguise.
        assert.strictEqual((yield* runCheck(service)).json.state, "active")
        const actionsUrl = `${service.url}/api/admin/v1/workspaces/${service.workspaceId}/action-requests`
        const created = yield* send(actionsUrl, "POST", service.adminKey, intakeInput())
        assert.strictEqual(created.status, 202)
        const actionUrl = `${actionsUrl}/${created.json.actionRequestId}`
        const keys = {
          ingest,
          read,
          otherWorkspace: other.adminKey,
          missing: undefined,
          unknown: "acc_admin_" + "x".repeat(43)
        }
        const actionStatuses: Record<string, ReadonlyArray<number>> = {}
        for (const [name, key] of Object.entries(keys)) {
          actionStatuses[name] = [
            (yield* send(actionsUrl, "POST", key, intakeInput())).status,
            (yield* send(actionUrl, "GET", key)).status
          ]
        }
        assert.deepStrictEqual(actionStatuses, {
          ingest: [403, 403],
          read: [403, 403],
          otherWorkspace: [403, 403],
          missing: [401, 401],
          unknown: [401, 401]
        })
        const shown = yield* send(actionUrl, "GET", service.adminKey)
        assert.strictEqual(shown.status, 200)
        assert.deepStrictEqual(shown.json.history.map((h: { trigger: string }) => h.trigger).slice(0, 1), ["intake"])
      })
  )

  it.scoped("the body must be exactly { endpoint, actionSigningSecret, completionSecret }: 400, nothing echoed", () =>
    Effect.gen(function* () {
      const service = yield* startService()
      const cases = [
        { ...body, extra: "x" },
        { endpoint, actionSigningSecret },
        { ...body, completionSecret: 42 },
        [body],
        { ...body, endpoint: "" }
      ]
      for (const candidate of cases) {
        const reply = yield* send(service.connectorUrl, "PUT", service.adminKey, candidate)
        assert.strictEqual(reply.status, 400)
        assert.strictEqual(reply.json.code, "invalid_body")
        assert.strictEqual(reply.headers.get("content-type"), "application/problem+json")
        assert.notInclude(reply.text, actionSigningSecret)
      }
      const extra = yield* send(service.connectorUrl, "PUT", service.adminKey, { ...body, extra: "x" })
      assert.deepStrictEqual(extra.json.errors, [{ path: "extra", message: "is not allowed" }])
      const malformed = yield* send(service.connectorUrl, "PUT", service.adminKey, "{")
      assert.strictEqual(malformed.json.code, "malformed_json")
      assert.strictEqual((yield* showConnector(service)).status, 404)
    })
  )

  it.scoped("secret rules: each one refused with its code and field, the value never echoed or stored", () =>
    Effect.gen(function* () {
      const service = yield* startService()
      const short = "s".repeat(31)
      const cases: ReadonlyArray<readonly [Record<string, unknown>, string, ReadonlyArray<string>]> = [
        [{ ...body, actionSigningSecret: short }, "secret_too_short", ["actionSigningSecret"]],
        [{ ...body, completionSecret: short }, "secret_too_short", ["completionSecret"]],
        [
          { ...body, actionSigningSecret: short, completionSecret: short },
          "secret_too_short",
          ["actionSigningSecret", "completionSecret", "completionSecret"]
        ],
        [{ ...body, completionSecret: "c".repeat(513) }, "secret_too_long", ["completionSecret"]],
        [{ ...body, actionSigningSecret: actionSigningSecret + "\n" }, "secret_whitespace", ["actionSigningSecret"]],
        [{ ...body, completionSecret: " " + completionSecret }, "secret_whitespace", ["completionSecret"]],
        [{ ...body, completionSecret: actionSigningSecret }, "secrets_not_distinct", ["completionSecret"]]
      ]
      for (const [candidate, code, paths] of cases) {
        const reply = yield* send(service.connectorUrl, "PUT", service.adminKey, candidate)
        assert.strictEqual(reply.status, 422, code)
        assert.strictEqual(reply.json.code, code)
        assert.deepStrictEqual(
          reply.json.errors.map((e: { path: string }) => e.path),
          paths
        )
        assert.notInclude(reply.text, short)
        assert.notInclude(reply.text, actionSigningSecret)
      }
      // Exactly 32 characters (code points, not UTF-16 units) is enough.
      const emoji = "🔑".repeat(32)
      const accepted = yield* send(service.connectorUrl, "PUT", service.adminKey, { ...body, completionSecret: emoji })
      assert.strictEqual(accepted.status, 201)
      assert.strictEqual(accepted.json.revision, 0)
    })
  )

  it.scoped("endpoints are validated: credentials, query, fragment and non-URLs are refused with 422", () =>
    Effect.gen(function* () {
      const service = yield* startService()
      for (const bad of [
        "http://user:pw@127.0.0.1/hook",
        "http://127.0.0.1/hook?x=1",
        "http://127.0.0.1/hook#f",
        "not a url",
        "ftp://127.0.0.1/hook"
      ]) {
        const reply = yield* send(service.connectorUrl, "PUT", service.adminKey, { ...body, endpoint: bad })
        assert.strictEqual(reply.status, 422, bad)
        assert.strictEqual(reply.json.errors[0].path, "endpoint")
        assert.notInclude(reply.text, "pw@")
      }
      assert.strictEqual((yield* showConnector(service)).status, 404)
    })
  )

  it.scoped("each registration is a new pending revision; the older pending one is superseded", () =>
    Effect.gen(function* () {
      const service = yield* startService()
      const first = yield* registerEndpoint(service, endpoint)
      const second = yield* registerEndpoint(service, "http://127.0.0.1:10/other")
      assert.strictEqual(second.connectionId, first.connectionId)
      assert.deepStrictEqual([first.revision, second.revision], [0, 1])
      const view = (yield* showConnector(service)).json
      assert.strictEqual(view.pendingRevision, 1)
      assert.strictEqual(view.activeRevision, null)
      assert.deepStrictEqual(
        view.revisions.map((r: { revision: number; state: string }) => [r.revision, r.state]),
        [
          [1, "pending"],
          [0, "superseded"]
        ]
      )
      assert.strictEqual(view.endpointHost, "127.0.0.1:10")
      assert.strictEqual(view.paymentCapabilities, null)
      assert.strictEqual(view.lastCheck, null)
      const trail = yield* Effect.flatMap(ConnectionStore, (store) => store.audit(first.connectionId))
      assert.deepStrictEqual(
        trail.map((e) => [e.revision, e.event]),
        [
          [0, "registered"],
          [1, "registered"]
        ]
      )
    })
  )

  it.scoped(
    "secrets are sealed in the vault under the revision's refs, never in a connection row, response or log",
    () =>
      Effect.gen(function* () {
        const service = yield* startService()
        const { connectionId, revision } = yield* registerEndpoint(service, endpoint)
        const vault = yield* SecretVault
        const opened = yield* Effect.all([
          vault.get(connectorSecretRef(connectionId, revision, "actionSigning")),
          vault.get(connectorSecretRef(connectionId, revision, "completion"))
        ])
        assert.deepStrictEqual(
          opened.map((o) => Redacted.value(Option.getOrThrow(o))),
          [actionSigningSecret, completionSecret]
        )
        const sql = yield* SqlClient.SqlClient
        const rows = JSON.stringify([
          yield* sql`SELECT * FROM accord_connections WHERE connection_id = ${connectionId}`,
          yield* sql`SELECT * FROM accord_connection_revisions WHERE connection_id = ${connectionId}`,
          yield* sql`SELECT * FROM accord_connection_audit WHERE connection_id = ${connectionId}`,
          yield* sql`SELECT * FROM accord_secrets WHERE ref LIKE ${`connector:${connectionId}:%`}`
        ])
        assert.notInclude(rows, actionSigningSecret)
        assert.notInclude(rows, completionSecret)
        assert.include(rows, "v1.") // the sealed form is there
        const view = yield* showConnector(service)
        assert.notInclude(view.text, actionSigningSecret)
        assert.notInclude(view.text, "/accord/hook") // the host only, never the path
        assert.notInclude(service.logs.join("\n"), actionSigningSecret)
        assert.notInclude(service.logs.join("\n"), completionSecret)
      })
  )

  it.scoped("GET /connector of a workspace without a connector is 404 connector_not_configured; so is a check", () =>
    Effect.gen(function* () {
      const service = yield* startService()
      const shown = yield* showConnector(service)
      assert.strictEqual(shown.status, 404)
      assert.strictEqual(shown.json.code, "connector_not_configured")
      const checked = yield* send(`${service.connectorUrl}/check`, "POST", service.adminKey)
      assert.strictEqual(checked.status, 404)
      assert.strictEqual(checked.json.code, "connector_not_configured")
    })
  )
})
