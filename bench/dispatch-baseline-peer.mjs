// Baseline peer for bench:dispatch: node:http, HMAC-SHA-256 check with node:crypto, one INSERT per
// request into PostgreSQL (unique key, as a durable claim), a signed 202. No Accord code.
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto"
import { createServer } from "node:http"
import pg from "pg"

const secret = process.env.ACCORD_ACTION_SIGNING_SECRET
const pool = new pg.Pool({
  connectionString: process.env.DATABASE_URL,
  max: 16,
  options: `-csearch_path=${process.env.KIT_SCHEMA}`
})
await pool.query("CREATE TABLE IF NOT EXISTS baseline_claims (key text PRIMARY KEY, body jsonb NOT NULL)")
const mac = (purpose, ts, nonce, body) =>
  createHmac("sha256", secret)
    .update(`service-customer-action-v1\n${purpose}\n${ts}\n${nonce}\n`)
    .update(body)
    .digest("hex")
const server = createServer((req, res) => {
  const chunks = []
  req.on("data", (c) => chunks.push(c))
  req.on("end", async () => {
    const body = Buffer.concat(chunks)
    const expected = Buffer.from(
      "v1=" +
        mac(
          "dispatch_request",
          req.headers["x-service-customer-action-timestamp"],
          req.headers["x-service-customer-action-nonce"],
          body
        )
    )
    const given = Buffer.from(String(req.headers["x-service-customer-action-signature"]))
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return res.writeHead(401).end()
    const json = JSON.parse(body.toString())
    await pool.query("INSERT INTO baseline_claims (key, body) VALUES ($1, $2) ON CONFLICT DO NOTHING", [
      json.providerIdempotencyKey,
      body.toString()
    ])
    const ack = Buffer.from(
      JSON.stringify({
        type: "service.customer_action.ack",
        state: "accepted",
        providerIdempotencyKey: json.providerIdempotencyKey,
        requestNonce: json.requestNonce
      })
    )
    const ts = new Date().toISOString()
    const nonce = randomBytes(24).toString("base64url")
    res
      .writeHead(202, {
        "content-type": "application/json",
        "x-service-customer-action-timestamp": ts,
        "x-service-customer-action-nonce": nonce,
        "x-service-customer-action-signature": "v1=" + mac("dispatch_response", ts, nonce, ack)
      })
      .end(ack)
  })
})
server.keepAliveTimeout = 10_000
server.listen(0, "127.0.0.1", () => console.log(`ready ${server.address().port}`))
process.on("SIGTERM", () => server.close(() => pool.end().then(() => process.exit(0))))
