// The baseline for bench:ingest: a minimal node:http server that inserts one row per request with
// `pg` and answers 202 after the insert returns. No validation, no auth, no idempotency.
import { createServer } from "node:http"
import pg from "pg"

const { DATABASE_URL, PORT, SCHEMA } = process.env
const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 32 })
await pool.query(`CREATE TABLE IF NOT EXISTS ${SCHEMA}.baseline_events (id bigserial PRIMARY KEY, body jsonb NOT NULL)`)

const server = createServer((req, res) => {
  const chunks = []
  req.on("data", (c) => chunks.push(c))
  req.on("end", () => {
    pool.query(`INSERT INTO ${SCHEMA}.baseline_events (body) VALUES ($1)`, [Buffer.concat(chunks).toString()]).then(
      () => {
        res.writeHead(202, { "content-type": "application/json" })
        res.end('{"status":"accepted"}')
      },
      () => {
        res.writeHead(500)
        res.end()
      }
    )
  })
})
server.listen(Number(PORT), "127.0.0.1", () => console.log("listening"))
process.on("SIGTERM", () => server.close(() => pool.end().then(() => process.exit(0))))
