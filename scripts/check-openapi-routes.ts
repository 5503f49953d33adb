/**
 * What `npm run check:openapi` checks, shared with its test: the OpenAPI document validates
 * (`@apidevtools/swagger-parser`, OpenAPI 3.1), and its operations are exactly the routes the app
 * router serves (method and path, `:param` written `{param}`), so the document can neither miss a
 * route nor describe one that is not served; and every 503 and 429 answer documents its
 * `Retry-After` header.
 */
import SwaggerParser from "@apidevtools/swagger-parser"
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as Chunk from "effect/Chunk"
import type * as OpenApi from "@effect/platform/OpenApi"

/** Every route the router serves, `METHOD /path/{param}`, mounts followed, sorted. */
export const servedRoutes = (router: HttpRouter.HttpRouter<any, any>, prefix = ""): ReadonlyArray<string> =>
  [
    ...Chunk.toReadonlyArray(router.routes).map((route) => `${route.method} ${openApiPath(prefix + route.path)}`),
    ...Chunk.toReadonlyArray(router.mounts).flatMap(([mount, app]) =>
      HttpRouter.TypeId in app
        ? servedRoutes(app as unknown as HttpRouter.HttpRouter<any, any>, prefix + mount)
        : [`* ${openApiPath(prefix + mount)}/*`]
    )
  ].sort()

const openApiPath = (path: string): string => path.replace(/:(\w+)\??/g, "{$1}")

/** Every operation the document describes, `METHOD /path/{param}`, sorted. */
export const documentedRoutes = (document: OpenApi.OpenAPISpec): ReadonlyArray<string> =>
  Object.entries(document.paths)
    .flatMap(([path, item]) =>
      Object.keys(item)
        .filter((key) => ["get", "put", "post", "delete", "patch", "head", "options"].includes(key))
        .map((method) => `${method.toUpperCase()} ${path}`)
    )
    .sort()

/** Every 503 and 429 answer of the document without a `retry-after` header, `METHOD /path status`. */
export const withoutRetryAfter = (document: OpenApi.OpenAPISpec): ReadonlyArray<string> =>
  Object.entries(document.paths).flatMap(([path, item]) =>
    Object.entries(
      item as Record<string, { readonly responses?: Record<string, { readonly headers?: object }> }>
    ).flatMap(([method, operation]) =>
      Object.entries(operation.responses ?? {})
        .filter(
          ([status, response]) => (status === "503" || status === "429") && !("retry-after" in (response.headers ?? {}))
        )
        .map(([status]) => `${method.toUpperCase()} ${path} ${status}`)
    )
  )

/** The problems found: validation errors, undocumented routes, documented routes not served. */
export const checkDocument = async (
  document: OpenApi.OpenAPISpec,
  router: HttpRouter.HttpRouter<any, any>
): Promise<ReadonlyArray<string>> => {
  const problems: Array<string> = []
  // the parser dereferences in place: give it a copy
  await SwaggerParser.validate(structuredClone(document) as never).catch((error: unknown) => {
    problems.push(`the document does not validate: ${error instanceof Error ? error.message : String(error)}`)
  })
  const served = new Set(servedRoutes(router))
  const documented = new Set(documentedRoutes(document))
  for (const route of served) if (!documented.has(route)) problems.push(`served but not documented: ${route}`)
  for (const route of documented) if (!served.has(route)) problems.push(`documented but not served: ${route}`)
  for (const route of withoutRetryAfter(document)) problems.push(`no Retry-After header documented: ${route}`)
  return problems
}
