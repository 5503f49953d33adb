// The baseline for bench:shutdown: a minimal node:http server that inserts one row per ingest
// request with `pg` and answers 202 after the insert, and stops on SIGTERM the textbook way: close
// the listener (Node's `server.close()`, which also closes idle keep-alive connections at once),
// answer later requests with `Connection: close`, cut what is left at the deadline, end the pool,
// exit. No validation, no auth.
import { createServer } from "node:http"
import pg from "pg"

const { DATABASE_URL, PORT, SCHEMA, DEADLINE_MS } = process.env
const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 32 })
await pool.query(`CREATE TABLE IF NOT EXISTS ${SCHEMA}.baseline_events (event_id text, body jsonb NOT NULL)`)

let stopping = false
const server = createServer((req, res) => {
  if (stopping) res.setHeader("connection", "close")
  if (req.url === "/healthz") return res.writeHead(200, { "content-length": 2 }).end("ok")
  const chunks = []
  req.on("data", (c) => chunks.push(c))
  req.on("end", () => {
    const body = Buffer.concat(chunks).toString()
    pool
      .query(`INSERT INTO ${SCHEMA}.baseline_events (event_id, body) VALUES ($1, $2)`, [
        JSON.parse(body).event_id,
        body
      ])
      .then(
        () => {
          res.writeHead(202, { "content-type": "application/json", "content-length": 21 })
          res.end('{"status":"accepted"}')
        },
        () => {
          res.writeHead(500, { "content-length": 0 })
          res.end()
        }
      )
  })
})
server.listen(Number(PORT), "127.0.0.1", () => console.log("listening"))
process.on("SIGTERM", () => {
  stopping = true
  const deadline = setTimeout(() => server.closeAllConnections(), Number(DEADLINE_MS) * 0.75)
  server.close(() => {
    clearTimeout(deadline)
    pool.end().then(() => process.exit(0))
  })
})
