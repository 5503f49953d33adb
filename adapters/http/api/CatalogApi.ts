/**
 * The stored catalog, under `/api/admin/v1/workspaces/{workspaceId}`: publish (admin keys) and
 * read (admin or developer:read keys). Handled by `routes/Catalog.ts`.
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { CatalogDocument } from "../../../core/protocol/messages/Catalog.ts"
import {
  adminGuarded,
  adminPath,
  bodyProblems,
  declaring,
  notFound,
  page,
  pageParams,
  Timestamp,
  UuidText
} from "./Common.ts"

const documentExample = {
  offers: [
    {
      offerId: "0a1b2c3d-4e5f-4607-8819-2a3b4c5d6e7f",
      offerVersionId: "1b2c3d4e-5f60-4718-9a2b-3c4d5e6f7a8b",
      price: null
    }
  ],
  actions: [
    {
      actionId: "5d4c3b2a-1908-4f7e-8d6c-5b4a39281706",
      actionVersionId: "6e5d4c3b-2a19-4087-9e6d-5c4b3a291807",
      key: "extend_trial_14",
      family: "extend_trial",
      evidence: ["entitlement_state"],
      frequency: { limit: 1, windowSeconds: 2592000 }
    }
  ],
  decisions: [
    {
      decisionId: "8e7d6c5b-4a39-4281-b706-f5e4d3c2b1a0",
      journeyId: "7a6b5c4d-3e2f-4a1b-9c8d-7e6f5a4b3c2d",
      actionIds: ["5d4c3b2a-1908-4f7e-8d6c-5b4a39281706"],
      offerIds: ["0a1b2c3d-4e5f-4607-8819-2a3b4c5d6e7f"],
      accountStatuses: ["trialing"]
    }
  ]
}

/**
 * `PUT /catalog` body.
 */
export const CatalogBody = CatalogDocument.annotations({ examples: [documentExample as never] })

const summaryFields = {
  version: Schema.Int,
  publishedVersionId: UuidText,
  publishedAt: Timestamp,
  publishedBy: Schema.String.annotations({ description: "who published it: `api_key:<id>`" })
}

const summaryExample = {
  version: 1,
  publishedVersionId: "2b3c4d5e-6f70-4812-a3b4-c5d6e7f8a9b0",
  publishedAt: "2026-11-22T10:15:30.000Z",
  publishedBy: "api_key:0b6f3f7e-9a51-4d1c-8e2f-5a7c0d9e1b23"
}

const WithDocument = Schema.Struct({
  ...summaryFields,
  document: Schema.Unknown.annotations({ description: "the catalog document as published" })
}).annotations({ examples: [{ ...summaryExample, document: documentExample }] })

export const publishCatalog = HttpApiEndpoint.put("publishCatalog", "/catalog")
  .setPath(adminPath({}))
  .setPayload(CatalogBody)
  .addSuccess(Schema.Struct(summaryFields).annotations({ examples: [summaryExample] }), { status: 201 })
  .addError(bodyProblems[0])
  .addError(bodyProblems[1])
  .addError(bodyProblems[2])
  .pipe(declaring("CatalogRejected", "PublishedVersionExists"))
  .annotate(OpenApi.Summary, "Publish the whole catalog as the next version (admin keys; body up to 1 MiB)")

export const getCatalog = HttpApiEndpoint.get("getCatalog", "/catalog")
  .setPath(adminPath({}))
  .addSuccess(WithDocument)
  .pipe(declaring("CatalogNotPublished"))
  .annotate(OpenApi.Summary, "The current catalog version with its document")

export const listCatalogVersions = HttpApiEndpoint.get("listCatalogVersions", "/catalog/versions")
  .setPath(adminPath({}))
  .setUrlParams(Schema.Struct(pageParams))
  .addSuccess(page(Schema.Struct(summaryFields), summaryExample))
  .pipe(declaring("InvalidQuery"))
  .annotate(OpenApi.Summary, "The catalog versions, newest first, without their documents: the audit trail, paged")

export const getCatalogVersion = HttpApiEndpoint.get("getCatalogVersion", "/catalog/versions/:version")
  .setPath(
    adminPath({
      version: Schema.String.annotations({ description: "the version number", pattern: "^[1-9][0-9]{0,8}$" })
    })
  )
  .addSuccess(WithDocument)
  .addError(notFound("catalog_version"))
  .annotate(OpenApi.Summary, "One catalog version with its document")

export const group = HttpApiGroup.make("catalog")
  .add(publishCatalog)
  .add(getCatalog)
  .add(listCatalogVersions)
  .add(getCatalogVersion)
  .pipe(adminGuarded)
  .annotate(OpenApi.Title, "Catalog")
  .annotate(
    OpenApi.Description,
    "Offers, actions and decisions that action requests bind to. Publishing needs an admin key; reads take admin or developer:read keys."
  )
