/**
 * Accord's schema, in order. Keys are `"<id>_<name>"`; ids only grow, and an applied migration
 * is never edited (add a new one instead).
 */
import type { Migrations } from "../Migrations.ts"
import { migration as init } from "./0001_init.ts"
import { migration as stores } from "./0002_stores.ts"
import { migration as ingest } from "./0003_ingest.ts"
import { migration as connectionAudit } from "./0004_connection_audit.ts"
import { migration as accountLogins } from "./0005_account_logins.ts"
import { migration as accountView } from "./0006_account_view.ts"
import { migration as outboxLease } from "./0007_outbox_lease.ts"
import { migration as rollupBuckets } from "./0009_rollup_buckets.ts"
import { migration as masterKeyCheck } from "./0010_master_key_check.ts"
import { migration as intakeKeys } from "./0011_intake_keys.ts"
import { migration as catalog } from "./0012_catalog.ts"
import { migration as retention } from "./0017_retention.ts"
import { migration as eventsByName } from "./0018_events_by_name.ts"
import { migration as adminLists } from "./0019_admin_lists.ts"
import { migration as approvals } from "./0021_approvals.ts"
import { migration as approvalLimits } from "./0022_approval_limits.ts"
import { migration as approvalTerms } from "./0023_approval_terms.ts"
import { migration as approvalLists } from "./0024_approval_lists.ts"
import { migration as suppressions } from "./0026_suppressions.ts"
import { migration as imports } from "./0027_imports.ts"
import { migration as workspaceKeys } from "./0028_workspace_keys.ts"
import { migration as eventPartitions } from "./0029_event_partitions.ts"
import { migration as eventsByAccountName } from "./0030_events_by_account_name.ts"

export const migrations: Migrations = {
  "0001_init": init,
  "0002_stores": stores,
  "0003_ingest": ingest,
  "0004_connection_audit": connectionAudit,
  "0005_account_logins": accountLogins,
  "0006_account_view": accountView,
  "0007_outbox_lease": outboxLease,
  "0009_rollup_buckets": rollupBuckets,
  "0010_master_key_check": masterKeyCheck,
  "0011_intake_keys": intakeKeys,
  "0012_catalog": catalog,
  "0017_retention": retention,
  "0018_events_by_name": eventsByName,
  "0019_admin_lists": adminLists,
  "0021_approvals": approvals,
  "0022_approval_limits": approvalLimits,
  "0023_approval_terms": approvalTerms,
  "0024_approval_lists": approvalLists,
  "0026_suppressions": suppressions,
  "0027_imports": imports,
  "0028_workspace_keys": workspaceKeys,
  "0029_event_partitions": eventPartitions,
  "0030_events_by_account_name": eventsByAccountName
}
