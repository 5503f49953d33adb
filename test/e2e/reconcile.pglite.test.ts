// Payment reconciliation end to end on PGlite.
import { suite } from "./reconcile.ts"

suite("pglite")
