/**
 * SCIM's own errors (RFC 7644 section 3.12). The `/scim/v2` routes answer with these bodies, not
 * the house envelope: identity providers read `status` and `scimType`, and show `detail` to the
 * administrator who set the provisioning up.
 */

/** The `scimType` values RFC 7644 section 3.12 defines; each goes with a 400 (`uniqueness` with a 409). */
export type ScimType =
  | 'invalidFilter'
  | 'tooMany'
  | 'uniqueness'
  | 'mutability'
  | 'invalidSyntax'
  | 'invalidPath'
  | 'noTarget'
  | 'invalidValue'
  | 'invalidVers'
  | 'sensitive';

export const scimErrorSchema = 'urn:ietf:params:scim:api:messages:2.0:Error';

/** An error that becomes a SCIM error response: its HTTP status, `scimType` and a detail for people. */
export class ScimError extends Error {
  constructor(
    readonly status: number,
    readonly scimType: ScimType | undefined,
    readonly detail: string,
  ) {
    super(detail);
    this.name = 'ScimError';
  }
}

export interface ScimErrorBody {
  schemas: [typeof scimErrorSchema];
  /** A string, as RFC 7644 writes it (`"400"`). */
  status: string;
  scimType?: ScimType;
  detail: string;
}

/** The response body of `error`. */
export function scimErrorBody(error: ScimError): ScimErrorBody {
  return {
    schemas: [scimErrorSchema],
    status: String(error.status),
    ...(error.scimType ? { scimType: error.scimType } : {}),
    detail: error.detail,
  };
}
