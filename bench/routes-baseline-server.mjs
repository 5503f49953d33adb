// The baseline for bench:routes: what a team would write by hand with node:http and pg for the same
// work as each measured Accord route, on tables of its own in the same schema.
// - GET /healthz: a bare answer.
// - GET /status/:id (runtime token): the bearer token looked up by its SHA-256, then one read of the
//   action, checked against the token's account and subject, answered as JSON.
// - GET /admin/:id (admin key): the key looked up by its SHA-256, then one read of the action with
//   its history (one statement), answered as JSON.
// - POST /complete: HMAC-SHA-256 over the signed input verified (constant time), the nonce claimed
//   (insert-if-absent), then one update of the action, answered as JSON.
// No rate limits, no problem documents, no logging, no metrics.
import { createHash, createHmac, timingSafeEqual } from "node:crypto"
import { createServer } from "node:http"
import pg from "pg"

const { DATABASE_URL, PORT, SCHEMA, COMPLETION_SECRET } = process.env
const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 16 })
const sha256 = (text) => createHash("sha256").update(text).digest("hex")
const bearer = (req) => /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1]
const send = (res, status, body) => {
  const text = body === undefined ? "" : JSON.stringify(body)
  res.writeHead(status, { "content-type": "application/json", "cache-control": "no-store" })
  res.end(text)
}
const failed = (res) => () => send(res, 500, { error: "internal" })

const status = async (req, res, id) => {
  const token = bearer(req)
  if (token === undefined) return send(res, 401, { error: "unauthorized" })
  const session = await pool.query(
    `SELECT account_id, subject FROM ${SCHEMA}.baseline_tokens WHERE token_hash = $1 AND kind = 'runtime' AND expires_at > $2`,
    [sha256(token), Date.now()]
  )
  if (session.rowCount === 0) return send(res, 401, { error: "unauthorized" })
  const { account_id, subject } = session.rows[0]
  const action = await pool.query(`SELECT state, account_id, subject FROM ${SCHEMA}.baseline_actions WHERE id = $1`, [
    id
  ])
  const row = action.rows[0]
  if (row === undefined || row.account_id !== account_id || row.subject !== subject)
    return send(res, 404, { error: "not_found" })
  send(res, 200, { actionRequestId: id, state: row.state, mayAdvance: row.state === "verified" })
}

const admin = async (req, res, id) => {
  const token = bearer(req)
  if (token === undefined) return send(res, 401, { error: "unauthorized" })
  const key = await pool.query(`SELECT 1 FROM ${SCHEMA}.baseline_tokens WHERE token_hash = $1 AND kind = 'admin'`, [
    sha256(token)
  ])
  if (key.rowCount === 0) return send(res, 401, { error: "unauthorized" })
  const action = await pool.query(
    `SELECT a.state, a.request, (SELECT coalesce(json_agg(h ORDER BY h.seq), '[]') FROM ${SCHEMA}.baseline_history h WHERE h.action_id = a.id) AS history
       FROM ${SCHEMA}.baseline_actions a WHERE a.id = $1`,
    [id]
  )
  const row = action.rows[0]
  if (row === undefined) return send(res, 404, { error: "not_found" })
  send(res, 200, { actionRequestId: id, state: row.state, request: row.request, history: row.history })
}

const complete = (req, res) => {
  const chunks = []
  req.on("data", (c) => chunks.push(c))
  req.on("end", () => {
    const body = Buffer.concat(chunks)
    const timestamp = req.headers["x-timestamp"]
    const nonce = req.headers["x-nonce"]
    const signature = req.headers["x-signature"] ?? ""
    if (
      typeof timestamp !== "string" ||
      typeof nonce !== "string" ||
      Math.abs(Date.now() - Date.parse(timestamp)) > 300_000
    )
      return send(res, 401, { error: "unauthorized" })
    const expected = createHmac("sha256", COMPLETION_SECRET)
      .update(`service-customer-action-v1\ncompletion\n${timestamp}\n${nonce}\n`)
      .update(body)
      .digest()
    const given = Buffer.from(signature.replace(/^v1=/, ""), "hex")
    if (given.length !== expected.length || !timingSafeEqual(given, expected))
      return send(res, 401, { error: "unauthorized" })
    let parsed
    try {
      parsed = JSON.parse(body.toString())
    } catch {
      return send(res, 400, { error: "malformed" })
    }
    pool
      .query(`INSERT INTO ${SCHEMA}.baseline_nonces (nonce, expires_at) VALUES ($1, $2) ON CONFLICT DO NOTHING`, [
        nonce,
        Date.now() + 600_000
      ])
      .then((claimed) => {
        if (claimed.rowCount === 0) return send(res, 401, { error: "replayed" })
        return pool
          .query(
            `UPDATE ${SCHEMA}.baseline_actions SET state = $2, version = version + 1 WHERE id = $1 RETURNING state`,
            [parsed.actionRequestId, "verified"]
          )
          .then((updated) =>
            updated.rowCount === 0
              ? send(res, 404, { error: "not_found" })
              : send(res, 200, {
                  status: "recorded",
                  actionRequestId: parsed.actionRequestId,
                  state: updated.rows[0].state
                })
          )
      }, failed(res))
      .catch(failed(res))
  })
}

const server = createServer((req, res) => {
  const url = req.url ?? "/"
  if (url === "/healthz") return send(res, 200, { status: "ok" })
  let match = /^\/status\/([0-9a-f-]{36})$/.exec(url)
  if (match !== null) return void status(req, res, match[1]).catch(failed(res))
  match = /^\/admin\/([0-9a-f-]{36})$/.exec(url)
  if (match !== null) return void admin(req, res, match[1]).catch(failed(res))
  if (url === "/complete" && req.method === "POST") return complete(req, res)
  send(res, 404, { error: "not_found" })
})
server.listen(Number(PORT), "127.0.0.1", () => console.log("listening"))
process.on("SIGTERM", () => server.close(() => pool.end().then(() => process.exit(0))))
