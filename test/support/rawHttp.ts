/**
 * One HTTP/1.1 request written as raw bytes on a loopback socket, for the fuzz suites: `fetch` and
 * `node:http` refuse to send what a hostile client can (NUL or invalid UTF-8 in the target, any
 * method, odd header bytes), so the request is framed here and the answer parsed from the socket.
 */
import { connect } from "node:net"

export interface RawReply {
  readonly status: number
  /** Header names lower-cased; a repeated header keeps its last value. */
  readonly headers: Readonly<Record<string, string>>
  readonly body: Uint8Array
  readonly text: string
  readonly json: any
}

export interface RawRequest {
  readonly method: string
  /** The request target as bytes (a string is sent as latin1, one byte per char code). */
  readonly target: string | Uint8Array
  /** Header lines; values are sent as latin1 bytes. `content-length` is added for a body. */
  readonly headers?: ReadonlyArray<readonly [string, string]>
  readonly body?: Uint8Array
}

const latin1 = (text: string) => Buffer.from(text, "latin1")

const dechunk = (bytes: Buffer): Buffer => {
  const parts: Array<Buffer> = []
  let at = 0
  for (;;) {
    const end = bytes.indexOf("\r\n", at)
    if (end < 0) break
    const size = parseInt(bytes.subarray(at, end).toString("latin1"), 16)
    if (!Number.isFinite(size) || size === 0) break
    parts.push(bytes.subarray(end + 2, end + 2 + size))
    at = end + 2 + size + 2
  }
  return Buffer.concat(parts)
}

/** Sends one request with `connection: close` and reads the whole answer. */
export const rawRequest = (port: number, request: RawRequest): Promise<RawReply> =>
  new Promise((resolve, reject) => {
    const body = request.body ?? new Uint8Array()
    const target = typeof request.target === "string" ? latin1(request.target) : Buffer.from(request.target)
    const lines = [
      ...(request.headers ?? []).map(([name, value]) =>
        Buffer.concat([latin1(`${name}: `), latin1(value), latin1("\r\n")])
      ),
      latin1(`host: 127.0.0.1:${port}\r\nconnection: close\r\n`),
      request.body === undefined && request.method !== "POST" && request.method !== "PUT"
        ? latin1("")
        : latin1(`content-length: ${body.length}\r\n`)
    ]
    const head = Buffer.concat([
      latin1(`${request.method} `),
      target,
      latin1(" HTTP/1.1\r\n"),
      ...lines,
      latin1("\r\n")
    ])
    const socket = connect(port, "127.0.0.1")
    const chunks: Array<Buffer> = []
    socket.on("data", (chunk: Buffer) => chunks.push(chunk))
    socket.on("error", (error: NodeJS.ErrnoException) => {
      // The server may answer and close before the whole body is written.
      if (error.code === "EPIPE" || error.code === "ECONNRESET") return
      reject(error)
    })
    socket.on("close", () => {
      const all = Buffer.concat(chunks)
      const split = all.indexOf("\r\n\r\n")
      if (split < 0) return reject(new Error(`no HTTP answer (${all.length} bytes)`))
      const [statusLine, ...headerLines] = all.subarray(0, split).toString("latin1").split("\r\n")
      const headers: Record<string, string> = {}
      for (const line of headerLines) {
        const colon = line.indexOf(":")
        headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
      }
      let rest: Buffer = all.subarray(split + 4)
      if (headers["transfer-encoding"]?.includes("chunked")) rest = dechunk(rest)
      const text = rest.toString("utf8")
      let json: unknown
      try {
        json = JSON.parse(text)
      } catch {
        // not JSON
      }
      resolve({ status: Number(statusLine!.split(" ")[1]), headers, body: new Uint8Array(rest), text, json })
    })
    socket.write(head)
    socket.end(body)
  })
