/**
 * The answer to a request no route takes: 405 with `Allow` when the path is known under other
 * methods (RFC 9110 §15.5.6: "The origin server MUST generate an Allow header field in a 405
 * response"), else 404. The allowed methods are read from the router itself, so they never
 * drift from the routes.
 */
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as Chunk from "effect/Chunk"
import * as Problem from "./Problem.ts"

const segments = (path: string): ReadonlyArray<string> => path.split("/").filter((segment) => segment !== "")

/** How many leading path segments `pattern` matches (`:param` takes one, `*` the rest); -1 if none. */
const matchPrefix = (pattern: ReadonlyArray<string>, path: ReadonlyArray<string>): number => {
  for (let i = 0; i < pattern.length; i++) {
    if (pattern[i] === "*") return path.length
    if (i >= path.length) return -1
    if (!pattern[i]!.startsWith(":") && pattern[i] !== path[i]) return -1
  }
  return pattern.length
}

const methodsOf = (
  router: HttpRouter.HttpRouter<unknown, unknown>,
  path: ReadonlyArray<string>
): ReadonlyArray<string> => [
  ...Chunk.toReadonlyArray(router.routes).flatMap((route) => {
    const pattern = segments(route.path)
    return matchPrefix(pattern, path) === path.length && (pattern.length === path.length || pattern.at(-1) === "*")
      ? [route.method]
      : []
  }),
  ...Chunk.toReadonlyArray(router.mounts).flatMap(([prefix, app]) => {
    const taken = matchPrefix(segments(prefix), path)
    return taken >= 0 && HttpRouter.TypeId in app
      ? methodsOf(app as unknown as HttpRouter.HttpRouter<unknown, unknown>, path.slice(taken))
      : []
  })
]

/**
 * The methods the router serves at `path` (its query string ignored), sorted; empty for an
 * unknown path.
 */
export const allowedMethods = (router: HttpRouter.HttpRouter<any, any>, path: string): ReadonlyArray<string> => {
  const methods = new Set(methodsOf(router, segments(path.split("?")[0]!)))
  return methods.has("*") ? [] : [...methods].sort()
}

/**
 * The problem for `method` on `path` when no route took the request.
 */
export const problem = (router: HttpRouter.HttpRouter<any, any>, method: string, path: string): Problem.Problem => {
  const allowed = allowedMethods(router, path)
  return allowed.length === 0 ? Problem.notFound("no such route") : Problem.methodNotAllowed(method, allowed)
}
