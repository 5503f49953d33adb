/**
 * A TCP proxy to a server (PostgreSQL, in the fault tests and benches) that can be frozen: while
 * frozen it still accepts connections but forwards nothing either way, as a database stopped with
 * SIGSTOP (or behind a network that drops every packet) behaves for its clients. What was sent
 * meanwhile is held, and delivered in order when the proxy thaws; a side that closed meanwhile is
 * closed on the other side only then, after its held bytes (a stopped server reads what its
 * kernel buffered before it sees the close).
 */
import { connect, createServer, type Socket } from "node:net"

/** The proxy: its port on 127.0.0.1, and its switch. */
export interface FreezingProxy {
  readonly port: number
  /** From now on, nothing is forwarded (connections are still accepted). */
  readonly freeze: () => void
  /** Delivers what was held and forwards again. */
  readonly thaw: () => void
  /** Closes the listener and every connection. */
  readonly close: () => Promise<void>
}

/** One direction of a connection: bytes held while frozen, and whether its source has ended. */
interface Direction {
  readonly held: Array<Buffer>
  ended: boolean
}

/** Starts a proxy on a free loopback port to `target`. */
export const start = (target: { readonly host: string; readonly port: number }): Promise<FreezingProxy> =>
  new Promise((resolve, reject) => {
    let frozen = false
    const flushes = new Set<() => void>()
    const sockets = new Set<Socket>()
    const forward = (from: Socket, to: Socket): (() => void) => {
      const direction: Direction = { held: [], ended: false }
      const deliver = () => {
        for (const chunk of direction.held.splice(0)) if (!to.destroyed) to.write(chunk)
        if (direction.ended) to.end()
      }
      from.on("data", (chunk: Buffer) => {
        if (frozen) direction.held.push(chunk)
        else if (!to.destroyed) to.write(chunk)
      })
      from.on("close", () => {
        direction.ended = true
        if (!frozen) to.destroy()
      })
      return deliver
    }
    const server = createServer((client) => {
      const upstream = connect(target.port, target.host)
      for (const socket of [client, upstream]) {
        sockets.add(socket)
        socket.on("error", () => undefined)
        socket.on("close", () => sockets.delete(socket))
      }
      const toServer = forward(client, upstream)
      const toClient = forward(upstream, client)
      const flush = () => {
        toServer()
        toClient()
      }
      flushes.add(flush)
      client.on("close", () => {
        if (!frozen) flushes.delete(flush)
      })
    })
    server.on("error", reject)
    server.listen(0, "127.0.0.1", () =>
      resolve({
        port: (server.address() as { readonly port: number }).port,
        freeze: () => {
          frozen = true
        },
        thaw: () => {
          frozen = false
          for (const flush of flushes) flush()
        },
        close: () =>
          new Promise<void>((done) => {
            for (const socket of sockets) socket.destroy()
            server.close(() => done())
          })
      })
    )
  })
