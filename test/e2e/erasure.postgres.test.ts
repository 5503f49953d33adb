// Erasure, suppression and export end to end, on PostgreSQL (skipped without DATABASE_URL).
import { storageVariants } from "../support/storage.ts"
import { suite } from "./erasure.ts"

suite(storageVariants.find((v) => v.name === "postgres")!)
