// Erasure, suppression and export end to end, on PGlite.
import { storageVariants } from "../support/storage.ts"
import { suite } from "./erasure.ts"

suite(storageVariants.find((v) => v.name === "pglite")!)
