/**
 * The least an Effect platform server does for each measured route (for `bench:routes`): the
 * baseline's own work (`routes-baseline-server.mjs`, same tables, same statements) written on the
 * stack Accord is built on, `HttpRouter` routes served by `@effect/platform-node`'s
 * `NodeHttpServer` with statements through `@effect/sql-pg`, with no middleware, no logging, no
 * schema decoding and no problem documents. Beside the node:http baseline it shows what the
 * platform and the SQL client cost per request by themselves, which Accord's figure includes.
 *
 * - GET /healthz: a bare answer (no database needed; the other routes need DATABASE_URL and SCHEMA).
 * - GET /status/:id, GET /admin/:id, POST /complete: as the baseline's routes of those names.
 */
import { createHash, createHmac, timingSafeEqual } from "node:crypto"
import { createServer } from "node:http"
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServer from "@effect/platform/HttpServer"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as SqlClient from "@effect/sql/SqlClient"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"

const { DATABASE_URL, PORT, SCHEMA, COMPLETION_SECRET } = process.env
const sha256 = (text) => createHash("sha256").update(text).digest("hex")
const json = (status, body) => HttpServerResponse.unsafeJson(body, { status, headers: { "cache-control": "no-store" } })
const bearer = Effect.map(
  HttpServerRequest.HttpServerRequest,
  (req) => /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1]
)

const status = Effect.gen(function* () {
  const token = yield* bearer
  if (token === undefined) return json(401, { error: "unauthorized" })
  const { id } = yield* HttpRouter.params
  const sql = yield* SqlClient.SqlClient
  const sessions = yield* sql.unsafe(
    `SELECT account_id, subject FROM ${SCHEMA}.baseline_tokens WHERE token_hash = $1 AND kind = 'runtime' AND expires_at > $2`,
    [sha256(token), Date.now()]
  )
  const session = sessions[0]
  if (session === undefined) return json(401, { error: "unauthorized" })
  const actions = yield* sql.unsafe(`SELECT state, account_id, subject FROM ${SCHEMA}.baseline_actions WHERE id = $1`, [
    id
  ])
  const row = actions[0]
  if (row === undefined || row.account_id !== session.account_id || row.subject !== session.subject)
    return json(404, { error: "not_found" })
  return json(200, { actionRequestId: id, state: row.state, mayAdvance: row.state === "verified" })
})

const admin = Effect.gen(function* () {
  const token = yield* bearer
  if (token === undefined) return json(401, { error: "unauthorized" })
  const { id } = yield* HttpRouter.params
  const sql = yield* SqlClient.SqlClient
  const keys = yield* sql.unsafe(`SELECT 1 FROM ${SCHEMA}.baseline_tokens WHERE token_hash = $1 AND kind = 'admin'`, [
    sha256(token)
  ])
  if (keys.length === 0) return json(401, { error: "unauthorized" })
  const actions = yield* sql.unsafe(
    `SELECT a.state, a.request, (SELECT coalesce(json_agg(h ORDER BY h.seq), '[]') FROM ${SCHEMA}.baseline_history h WHERE h.action_id = a.id) AS history
       FROM ${SCHEMA}.baseline_actions a WHERE a.id = $1`,
    [id]
  )
  const row = actions[0]
  if (row === undefined) return json(404, { error: "not_found" })
  return json(200, { actionRequestId: id, state: row.state, request: row.request, history: row.history })
})

const complete = Effect.gen(function* () {
  const req = yield* HttpServerRequest.HttpServerRequest
  const body = Buffer.from(yield* req.arrayBuffer)
  const timestamp = req.headers["x-timestamp"]
  const nonce = req.headers["x-nonce"]
  const signature = req.headers["x-signature"] ?? ""
  if (
    typeof timestamp !== "string" ||
    typeof nonce !== "string" ||
    Math.abs(Date.now() - Date.parse(timestamp)) > 300_000
  )
    return json(401, { error: "unauthorized" })
  const expected = createHmac("sha256", COMPLETION_SECRET)
    .update(`service-customer-action-v1\ncompletion\n${timestamp}\n${nonce}\n`)
    .update(body)
    .digest()
  const given = Buffer.from(signature.replace(/^v1=/, ""), "hex")
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return json(401, { error: "unauthorized" })
  let parsed
  try {
    parsed = JSON.parse(body.toString())
  } catch {
    return json(400, { error: "malformed" })
  }
  const sql = yield* SqlClient.SqlClient
  const claimed = yield* sql.unsafe(
    `INSERT INTO ${SCHEMA}.baseline_nonces (nonce, expires_at) VALUES ($1, $2) ON CONFLICT DO NOTHING RETURNING 1`,
    [nonce, Date.now() + 600_000]
  )
  if (claimed.length === 0) return json(401, { error: "replayed" })
  const updated = yield* sql.unsafe(
    `UPDATE ${SCHEMA}.baseline_actions SET state = $2, version = version + 1 WHERE id = $1 RETURNING state`,
    [parsed.actionRequestId, "verified"]
  )
  return updated.length === 0
    ? json(404, { error: "not_found" })
    : json(200, { status: "recorded", actionRequestId: parsed.actionRequestId, state: updated[0].state })
})

const failed = Effect.catchAllCause(() => Effect.succeed(json(500, { error: "internal" })))
const router = HttpRouter.empty.pipe(
  HttpRouter.get("/healthz", HttpServerResponse.unsafeJson({ status: "ok" })),
  HttpRouter.get("/status/:id", failed(status)),
  HttpRouter.get("/admin/:id", failed(admin)),
  HttpRouter.post("/complete", failed(complete))
)
// Without a database only /healthz is served; the SQL routes would fail for want of a client.
const sqlLayer =
  DATABASE_URL === undefined || DATABASE_URL === ""
    ? Layer.empty
    : PgClient.layer({ url: Redacted.make(DATABASE_URL), maxConnections: 16 })
const app = router.pipe(
  HttpServer.serve(),
  Layer.provide(NodeHttpServer.layer(createServer, { port: Number(PORT), host: "127.0.0.1" })),
  Layer.provide(sqlLayer)
)
NodeRuntime.runMain(Layer.launch(app))
