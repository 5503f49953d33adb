/**
 * `npm run check:openapi`: the generated OpenAPI document validates, and documents exactly the
 * routes the app serves (see `check-openapi-routes.ts`).
 */
import * as Api from "../adapters/http/api/Api.ts"
import * as App from "../adapters/http/App.ts"
import { checkDocument, documentedRoutes } from "./check-openapi-routes.ts"

const router = App.router({ maxBodyBytes: 65_536, rateLimitPerSecond: 100, allowInsecureEndpoints: false })
const problems = await checkDocument(Api.document, router)
if (problems.length > 0) {
  for (const problem of problems) console.error(`check:openapi: ${problem}`)
  process.exit(1)
}
console.log(
  `OpenAPI document valid; its ${documentedRoutes(Api.document).length} operations are exactly the routes served`
)
