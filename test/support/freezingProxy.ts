/**
 * A TCP proxy to a server (PostgreSQL, in the fault tests and benches) that can be frozen: while
 * frozen it still accepts connections but forwards nothing either way, as a database stopped with
 * SIGSTOP (or behind a network that drops every packet) behaves for its clients. What was sent
 * meanwhile is held, and delivered in order when the proxy thaws; a side that closed meanwhile is
 * closed on the other side only then, after its held bytes (a stopped server reads what its
 * kernel buffered before it sees the close). It can also be slow: each answer of the server
 * delivered a fixed time late, as from a database that answers every statement, slowly.
 */
import { connect, createServer, type Socket } from "node:net"

/** The proxy: its port on 127.0.0.1, and its switch. */
export interface FreezingProxy {
  readonly port: number
  /** From now on, nothing is forwarded (connections are still accepted). */
  readonly freeze: () => void
  /** Delivers what was held and forwards again. */
  readonly thaw: () => void
  /** From now on each answer of the server reaches its client `millis` late (0: at once). */
  readonly delayAnswers: (millis: number) => void
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
    let answerDelay = 0
    const flushes = new Set<() => void>()
    const sockets = new Set<Socket>()
    const forward = (from: Socket, to: Socket, answers: boolean): (() => void) => {
      const direction: Direction = { held: [], ended: false }
      const deliver = () => {
        for (const chunk of direction.held.splice(0)) if (!to.destroyed) to.write(chunk)
        if (direction.ended) to.end()
      }
      const write = (chunk: Buffer) => {
        if (!to.destroyed) to.write(chunk)
      }
      from.on("data", (chunk: Buffer) => {
        if (frozen) direction.held.push(chunk)
        // Timers of one length fire in the order they were set: the answers keep their order.
        else if (answers && answerDelay > 0) setTimeout(() => write(chunk), answerDelay)
        else write(chunk)
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
      const toServer = forward(client, upstream, false)
      const toClient = forward(upstream, client, true)
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
        delayAnswers: (millis) => {
          answerDelay = millis
        },
        close: () =>
          new Promise<void>((done) => {
            for (const socket of sockets) socket.destroy()
            server.close(() => done())
          })
      })
    )
  })
