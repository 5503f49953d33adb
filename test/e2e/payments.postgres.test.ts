// Payments end to end on PostgreSQL (DATABASE_URL).
import { suite } from "./payments.ts"

suite("postgres")
