// Payment reconciliation end to end on PostgreSQL (DATABASE_URL).
import { suite } from "./reconcile.ts"

suite("postgres")
