/**
 * The catalog routes over real HTTP, on the server as composed by `Server.start`,
 * on memory, PGlite and PostgreSQL: `PUT /catalog` publishes the next version (201) or answers a
 * problem naming the field (400 `invalid_body`, 400 `invalid_catalog`, 409
 * `published_version_exists`) with nothing stored; `GET /catalog` (404 `catalog_not_published`
 * before the first publish), `GET /catalog/versions[/N]` (the audit trail, newest first); admin
 * may write, `developer:read` may only read, an ingest key nothing, no key 401. Never a 5xx.
 *
 * `startService` publishes the fixture catalog (version 1) in its workspace; the not-yet-published
 * workspace is a second one bootstrapped on the same storage.
 */
import { assert, describe, layer } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as NodeCrypto from "../../../../adapters/crypto/NodeCrypto.ts"
import { bootstrapWorkspace } from "../../../../core/access/ApiKeys.ts"
import type { CatalogDocument } from "../../../../core/protocol/messages/Catalog.ts"
import { ActionLedger } from "../../../../core/ports/ActionLedger.ts"
import { ApiKeyStore } from "../../../../core/ports/ApiKeyStore.ts"
import { ConnectionStore } from "../../../../core/ports/ConnectionStore.ts"
import { connectorSecretRef, SecretVault } from "../../../../core/ports/SecretVault.ts"
import { CatalogStore } from "../../../../core/ports/CatalogStore.ts"
import type { Reply } from "../../../support/http.ts"
import { fixtureCatalog, intakeInput } from "../../../support/deliveries.ts"
import { storageVariants, uid } from "../../../support/storage.ts"
import { issueKey, send, type Service, startService } from "../../../core/connector/connection/support.ts"
import { connect } from "../../../core/connector/dispatch/support.ts"

type Json = Record<string, any>

const catalogUrl = (service: { readonly url: string }, workspaceId: string, tail = "") =>
  `${service.url}/api/admin/v1/workspaces/${workspaceId}/catalog${tail}`

/** The fixture catalog as plain JSON under a fresh `publishedVersionId` (or none), to change one thing in. */
const fresh = (publishedVersionId: string | undefined = uid()): Json => {
  const { publishedVersionId: _, ...rest } = JSON.parse(JSON.stringify(fixtureCatalog)) as Json
  return publishedVersionId === undefined ? rest : { ...rest, publishedVersionId }
}

const put = (service: Service, document: unknown, key = service.adminKey): Effect.Effect<Reply> =>
  send(catalogUrl(service, service.workspaceId), "PUT", key, document)

const assertProblem = (reply: Reply, status: number, code: string) => {
  assert.strictEqual(reply.status, status, reply.text)
  assert.strictEqual(reply.headers.get("content-type"), "application/problem+json")
  assert.strictEqual(reply.json.code, code)
}

/**
 * The first error names the price's field; the price being nullable, the schema also reports the
 * price itself ("Expected null") for the other member of the union, and nothing else.
 */
const assertNamesPriceField = (reply: Reply, field: string) => {
  assert.strictEqual(reply.json.errors[0].path, `offers.0.price.${field}`)
  assert.deepStrictEqual(
    reply.json.errors.slice(1).map((e: Json) => e.path),
    ["offers.0.price"]
  )
}

/** How many versions the workspace has, read through the port (what is stored, not what is answered). */
const storedVersions = (workspaceId: string) =>
  Effect.map(
    Effect.flatMap(CatalogStore, (s) => s.versions(workspaceId, { limit: 100 })),
    (v) => v.length
  )

/** A second workspace on the same storage with an admin key of its own, nothing published. */
const emptyWorkspace = Effect.gen(function* () {
  const workspaceId = uid()
  const adminKey = `test-admin-${uid()}`
  yield* Effect.provide(bootstrapWorkspace(workspaceId, Redacted.make(adminKey)), NodeCrypto.layer)
  return { workspaceId, adminKey }
})

for (const variant of storageVariants) {
  describe.skipIf(!variant.available)(`catalog routes (${variant.name})`, () => {
    layer(Layer.suspend(variant.layer), { excludeTestServices: true, timeout: "60 seconds" })((it) => {
      it.scoped(
        "PUT publishes the next version: 201 with version, publishedVersionId, publishedAt and publishedBy",
        () =>
          Effect.gen(function* () {
            const service = yield* startService()
            const document = fresh()
            const reply = yield* put(service, document)
            assert.strictEqual(reply.status, 201, reply.text)
            assert.deepStrictEqual(Object.keys(reply.json).sort(), [
              "publishedAt",
              "publishedBy",
              "publishedVersionId",
              "version"
            ])
            assert.strictEqual(reply.json.version, 2)
            assert.strictEqual(reply.json.publishedVersionId, document.publishedVersionId)
            assert.match(reply.json.publishedAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
            // Who published it: the admin key's id, never its secret.
            const [bootstrap] = yield* (yield* ApiKeyStore).list(service.workspaceId)
            assert.strictEqual(reply.json.publishedBy, `api_key:${bootstrap!.id}`)
            assert.notInclude(reply.text, service.adminKey)
            // Without a publishedVersionId the service assigns one.
            const assigned = yield* put(service, fresh(undefined))
            assert.strictEqual(assigned.status, 201, assigned.text)
            assert.strictEqual(assigned.json.version, 3)
            assert.match(
              assigned.json.publishedVersionId,
              /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/
            )
            const current = yield* send(catalogUrl(service, service.workspaceId), "GET", service.adminKey)
            assert.strictEqual(current.status, 200)
            assert.strictEqual(current.json.publishedVersionId, assigned.json.publishedVersionId)
          })
      )

      it.scoped("a negative price: 400 invalid_body naming the field, nothing stored", () =>
        Effect.gen(function* () {
          const service = yield* startService()
          const document = fresh()
          document.offers[0].price.amountMinor = -100
          const reply = yield* put(service, document)
          assertProblem(reply, 400, "invalid_body")
          assertNamesPriceField(reply, "amountMinor")
          assert.strictEqual(yield* storedVersions(service.workspaceId), 1)
        })
      )

      it.scoped("a currency in the wrong format (USD, us): 400 invalid_body naming the field, nothing stored", () =>
        Effect.gen(function* () {
          const service = yield* startService()
          for (const currency of ["USD", "us"]) {
            const document = fresh()
            document.offers[0].price.currency = currency
            const reply = yield* put(service, document)
            assertProblem(reply, 400, "invalid_body")
            assertNamesPriceField(reply, "currency")
          }
          assert.strictEqual(yield* storedVersions(service.workspaceId), 1)
        })
      )

      it.scoped("an unknown operation family: 400 invalid_body naming the field, nothing stored", () =>
        Effect.gen(function* () {
          const service = yield* startService()
          const document = fresh()
          document.actions[0].family = "refund_everything"
          const reply = yield* put(service, document)
          assertProblem(reply, 400, "invalid_body")
          assert.deepStrictEqual(
            reply.json.errors.map((e: Json) => e.path),
            ["actions.0.family"]
          )
          assert.strictEqual(yield* storedVersions(service.workspaceId), 1)
        })
      )

      it.scoped("a reference that does not resolve: 400 invalid_catalog naming the path, nothing stored", () =>
        Effect.gen(function* () {
          const service = yield* startService()
          const document = fresh()
          document.decisions[0].offerIds.push(uid())
          const reply = yield* put(service, document)
          assertProblem(reply, 400, "invalid_catalog")
          assert.deepStrictEqual(
            reply.json.errors.map((e: Json) => e.path),
            ["decisions.0.offerIds.1"]
          )
          assert.strictEqual(yield* storedVersions(service.workspaceId), 1)
        })
      )

      it.scoped("a publishedVersionId already published: 409 published_version_exists naming it, nothing stored", () =>
        Effect.gen(function* () {
          const service = yield* startService()
          const reply = yield* put(service, { ...fresh(), publishedVersionId: fixtureCatalog.publishedVersionId })
          assertProblem(reply, 409, "published_version_exists")
          assert.deepStrictEqual(
            reply.json.errors.map((e: Json) => e.path),
            ["publishedVersionId"]
          )
          assert.strictEqual(yield* storedVersions(service.workspaceId), 1)
        })
      )

      it.scoped("GET /catalog before the first publish: 404 catalog_not_published pointing at PUT /catalog", () =>
        Effect.gen(function* () {
          const service = yield* startService()
          const empty = yield* emptyWorkspace
          const reply = yield* send(catalogUrl(service, empty.workspaceId), "GET", empty.adminKey)
          assertProblem(reply, 404, "catalog_not_published")
          assert.include(reply.json.detail, `PUT /api/admin/v1/workspaces/${empty.workspaceId}/catalog`)
          const versions = yield* send(catalogUrl(service, empty.workspaceId, "/versions"), "GET", empty.adminKey)
          assert.strictEqual(versions.status, 200)
          assert.deepStrictEqual(versions.json, { data: [], nextCursor: null })
          // The first publish there is version 1, whatever other workspaces hold.
          const first = yield* send(catalogUrl(service, empty.workspaceId), "PUT", empty.adminKey, fixtureCatalog)
          assert.strictEqual(first.status, 201, first.text)
          assert.strictEqual(first.json.version, 1)
        })
      )

      it.scoped("GET /catalog/versions is the audit trail, newest first; each version keeps its own document", () =>
        Effect.gen(function* () {
          const service = yield* startService()
          const second = fresh()
          second.offers[0].price.amountMinor = 5900
          assert.strictEqual((yield* put(service, second)).status, 201)
          const third = fresh()
          third.offers[0].price.amountMinor = 6900
          assert.strictEqual((yield* put(service, third)).status, 201)
          const list = yield* send(catalogUrl(service, service.workspaceId, "/versions"), "GET", service.adminKey)
          assert.strictEqual(list.status, 200)
          assert.deepStrictEqual(
            list.json.data.map((v: Json) => [v.version, v.publishedVersionId]),
            [
              [3, third.publishedVersionId],
              [2, second.publishedVersionId],
              [1, fixtureCatalog.publishedVersionId]
            ]
          )
          for (const entry of list.json.data) {
            assert.deepStrictEqual(Object.keys(entry).sort(), [
              "publishedAt",
              "publishedBy",
              "publishedVersionId",
              "version"
            ])
          }
          assert.isNull(list.json.nextCursor)
          const current = yield* send(catalogUrl(service, service.workspaceId), "GET", service.adminKey)
          assert.strictEqual(current.json.version, 3)
          assert.deepStrictEqual(current.json.document as CatalogDocument, third)
          const old = yield* send(catalogUrl(service, service.workspaceId, "/versions/1"), "GET", service.adminKey)
          assert.strictEqual(old.status, 200)
          assert.deepStrictEqual(old.json.document, fixtureCatalog)
          assert.strictEqual(
            (yield* send(catalogUrl(service, service.workspaceId, "/versions/2"), "GET", service.adminKey)).json
              .document.offers[0].price.amountMinor,
            5900
          )
          for (const missing of ["4", "0", "abc", "1e3", "99999999999"]) {
            assertProblem(
              yield* send(catalogUrl(service, service.workspaceId, `/versions/${missing}`), "GET", service.adminKey),
              404,
              "not_found"
            )
          }
        })
      )

      it.scoped("GET /catalog/versions pages: limit, then nextCursor until null; a bad cursor or limit is 400", () =>
        Effect.gen(function* () {
          const service = yield* startService()
          for (let i = 0; i < 3; i++) assert.strictEqual((yield* put(service, fresh())).status, 201)
          const versionsUrl = catalogUrl(service, service.workspaceId, "/versions")
          const pages: Array<Json> = []
          let cursor: string | null = ""
          while (cursor !== null) {
            const query: string = cursor === "" ? "?limit=3" : `?limit=3&cursor=${encodeURIComponent(cursor)}`
            const reply = yield* send(versionsUrl + query, "GET", service.adminKey)
            assert.strictEqual(reply.status, 200, reply.text)
            pages.push(reply.json)
            cursor = reply.json.nextCursor
          }
          assert.deepStrictEqual(
            pages.map((page) => page.data.map((v: Json) => v.version)),
            [[4, 3, 2], [1]]
          )
          assert.isString(pages[0]!.nextCursor)
          for (const bad of [
            "?cursor=not-a-cursor",
            `?cursor=${Buffer.from("0").toString("base64url")}`,
            "?limit=0",
            "?limit=201"
          ]) {
            const reply = yield* send(versionsUrl + bad, "GET", service.adminKey)
            assertProblem(reply, 400, "invalid_query")
          }
        })
      )

      it.scoped("developer:read may read but not publish (403); an ingest key neither (403); no key 401", () =>
        Effect.gen(function* () {
          const service = yield* startService()
          const developer = yield* issueKey(service, "developer:read")
          const ingest = yield* issueKey(service, "ingest")
          for (const tail of ["", "/versions", "/versions/1"]) {
            assert.strictEqual(
              (yield* send(catalogUrl(service, service.workspaceId, tail), "GET", developer)).status,
              200
            )
            assertProblem(yield* send(catalogUrl(service, service.workspaceId, tail), "GET", ingest), 403, "forbidden")
            assertProblem(
              yield* send(catalogUrl(service, service.workspaceId, tail), "GET", undefined),
              401,
              "unauthorized"
            )
          }
          assertProblem(yield* put(service, fresh(), developer), 403, "forbidden")
          assertProblem(yield* put(service, fresh(), ingest), 403, "forbidden")
          assertProblem(
            yield* send(catalogUrl(service, service.workspaceId), "PUT", undefined, fresh()),
            401,
            "unauthorized"
          )
          // Another workspace's admin key is not this workspace's.
          const other = yield* emptyWorkspace
          assertProblem(yield* put(service, fresh(), other.adminKey), 403, "forbidden")
          assert.strictEqual(yield* storedVersions(service.workspaceId), 1)
        })
      )

      it.scoped("never a 5xx: malformed, empty, wrong-typed and oversized bodies are 4xx, nothing stored", () =>
        Effect.gen(function* () {
          const service = yield* startService()
          const bodies: ReadonlyArray<string> = [
            "not json",
            "",
            "[]",
            "null",
            JSON.stringify({}),
            JSON.stringify({ ...fresh(), offers: "none" }),
            JSON.stringify({ ...fresh(), actions: [] }),
            JSON.stringify({ ...fresh(), publishedVersionId: "v2" }),
            JSON.stringify({ ...fresh(), offers: Array.from({ length: 1001 }, () => fixtureCatalog.offers[0]) }),
            "{" + " ".repeat(1024 * 1024) + "}"
          ]
          for (const body of bodies) {
            const reply = yield* send(catalogUrl(service, service.workspaceId), "PUT", service.adminKey, body)
            assert.isTrue(reply.status >= 400 && reply.status < 500, `${reply.status} for ${body.slice(0, 40)}`)
            assert.strictEqual(reply.headers.get("content-type"), "application/problem+json")
          }
          assert.strictEqual(yield* storedVersions(service.workspaceId), 1)
        })
      )

      it.scoped(
        "intake over HTTP before the first publish: 409 catalog_not_published pointing at PUT /catalog, nothing stored",
        () =>
          Effect.gen(function* () {
            const service = yield* startService()
            const empty = yield* emptyWorkspace
            // An active connection, set on the store, and no catalog.
            const connectionId = uid()
            const now = Date.now()
            const store = yield* ConnectionStore
            const vault = yield* SecretVault
            const { revision } = yield* store.registerRevision({
              workspaceId: empty.workspaceId,
              connectionId,
              endpoint: "http://127.0.0.1:1/connector",
              now
            })
            yield* vault.put(
              connectorSecretRef(connectionId, revision, "actionSigning"),
              Redacted.make("as_" + "5".repeat(40)),
              now
            )
            yield* vault.put(
              connectorSecretRef(connectionId, revision, "completion"),
              Redacted.make("cs_" + "6".repeat(40)),
              now
            )
            yield* store.activate({ connectionId, revision, now })
            const input = intakeInput(uid("acct_"))
            const reply = yield* send(
              `${service.url}/api/admin/v1/workspaces/${empty.workspaceId}/action-requests`,
              "POST",
              empty.adminKey,
              input
            )
            assertProblem(reply, 409, "catalog_not_published")
            assert.strictEqual(reply.json.errors[0].path, "binding.publishedVersionId")
            assert.include(reply.json.detail, "PUT /api/admin/v1/workspaces/")
            assert.strictEqual(
              yield* (yield* ActionLedger).countForFrequency({
                workspaceId: empty.workspaceId,
                accountId: input.accountId,
                actionId: input.action.id,
                since: 0
              }),
              0
            )
          })
      )

      it.scoped(
        "UUIDs in upper case name what their lower-case form names: the workspace, catalog references, the action request",
        () =>
          Effect.gen(function* () {
            const service = yield* startService()
            yield* connect("http://127.0.0.1:1/connector", {
              workspaceId: service.workspaceId,
              connectionId: uid(),
              secrets: {
                actionSigning: Redacted.make("as_" + "5".repeat(40)),
                completion: Redacted.make("cs_" + "6".repeat(40))
              }
            })
            const upper = (id: string) => id.toUpperCase()
            const workspace = `${service.url}/api/admin/v1/workspaces/${upper(service.workspaceId)}`
            // The decisions name the actions and offers in upper case; the catalog holds them lower case.
            const document = fresh(upper(uid()))
            for (const decision of document.decisions) {
              decision.actionIds = decision.actionIds.map(upper)
              decision.offerIds = decision.offerIds.map(upper)
            }
            const published = yield* send(`${workspace}/catalog`, "PUT", service.adminKey, document)
            assert.strictEqual(published.status, 201, published.text)
            assert.strictEqual(published.json.publishedVersionId, document.publishedVersionId.toLowerCase())
            const stored = yield* send(catalogUrl(service, service.workspaceId), "GET", service.adminKey)
            assert.deepStrictEqual(stored.json.document.decisions, fresh().decisions)

            const input = intakeInput(uid("acct_"))
            const taken = yield* send(`${workspace}/action-requests`, "POST", service.adminKey, {
              ...input,
              action: { ...input.action, id: upper(input.action.id) },
              binding: {
                decisionId: upper(input.binding.decisionId),
                journeyId: upper(input.binding.journeyId),
                offerId: upper(input.binding.offerId),
                publishedVersionId: document.publishedVersionId
              }
            })
            assert.strictEqual(taken.status, 202, taken.text)
            const shown = yield* send(
              `${workspace}/action-requests/${upper(taken.json.actionRequestId)}`,
              "GET",
              service.adminKey
            )
            assert.strictEqual(shown.status, 200, shown.text)
            assert.strictEqual(shown.json.actionRequestId, taken.json.actionRequestId)
            const record = Option.getOrThrow(yield* (yield* ActionLedger).get(taken.json.actionRequestId))
            const request = record.request as Json
            assert.strictEqual(request["action"].id, input.action.id)
            assert.deepStrictEqual(request["binding"], {
              ...input.binding,
              publishedVersionId: published.json.publishedVersionId
            })
          })
      )

      it.scoped(
        "intake over HTTP: a refusal names the field (422 decision_unknown); a taken action records the admin key as its authority",
        () =>
          Effect.gen(function* () {
            const service = yield* startService()
            yield* connect("http://127.0.0.1:1/connector", {
              workspaceId: service.workspaceId,
              connectionId: uid(),
              secrets: {
                actionSigning: Redacted.make("as_" + "5".repeat(40)),
                completion: Redacted.make("cs_" + "6".repeat(40))
              }
            })
            const url = `${service.url}/api/admin/v1/workspaces/${service.workspaceId}/action-requests`
            const input = intakeInput(uid("acct_"))
            const refused = yield* send(url, "POST", service.adminKey, {
              ...input,
              binding: { ...input.binding, decisionId: uid() }
            })
            assertProblem(refused, 422, "decision_unknown")
            assert.strictEqual(refused.json.errors[0].path, "binding.decisionId")
            const taken = yield* send(url, "POST", service.adminKey, input)
            assert.strictEqual(taken.status, 202, taken.text)
            const [bootstrap] = yield* (yield* ApiKeyStore).list(service.workspaceId)
            const record = Option.getOrThrow(yield* (yield* ActionLedger).get(taken.json.actionRequestId))
            assert.deepStrictEqual((record.request as Json)["authorizedBy"], { kind: "api_key", id: bootstrap!.id })
          })
      )
    })
  })
}
