// Approvals end to end on PostgreSQL.
import { storageVariants } from "../support/storage.ts"
import { suite } from "./approvals.ts"

suite(storageVariants.find((v) => v.name === "postgres")!)
