// Approvals end to end and the approval routes, on PGlite.
import { storageVariants } from "../support/storage.ts"
import { routeSuite, suite } from "./approvals.ts"

const pglite = storageVariants.find((v) => v.name === "pglite")!
suite(pglite)
routeSuite(pglite)
