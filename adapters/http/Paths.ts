/**
 * Route prefixes shared by the HTTP modules (DESIGN "HTTP surface").
 *
 * @since 0.1.0
 */

/**
 * Prefix of the workspace administrator routes.
 *
 * @since 0.1.0
 */
export const adminPrefix = "/api/admin/v1/workspaces" as const

/**
 * The one workspace every admin route sits under; its routes are declared relative to it.
 *
 * @since 0.1.0
 */
export const adminWorkspacePath = `${adminPrefix}/:workspaceId` as const
