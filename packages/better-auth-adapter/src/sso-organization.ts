import { getCurrentAdapter } from '@better-auth/core/context';
import type { BetterAuthPlugin } from 'better-auth';

/**
 * A Better Auth plugin for the `sso` plugin's sign-ins: the session a provider of an organization
 * signs someone in with is active in that organization, as the backend's own SSO sessions are
 * (the plugin leaves none active, and an app's tenant requests to the backend need one):
 *
 *   betterAuth({ plugins: [organization(), sso(), ssoActiveOrganization()] })
 *
 * The provider is the one the callback's path names (`/sso/callback/:providerId`, SAML's
 * `/sso/saml2/...:providerId`); the shared callback (`sso({ redirectURI })`) names none, and its
 * sessions stay as the plugin makes them. A session already given an organization keeps it. The
 * backend's sign-in rule judges the session in that organization (a user its directory
 * deprovisioned is refused), and its tenant routes still check the membership on every request.
 */
export function ssoActiveOrganization(): BetterAuthPlugin {
  return {
    id: 'authstrap-sso-active-organization',
    init: () => ({
      options: {
        databaseHooks: {
          session: {
            create: {
              async before(session, ctx) {
                const providerId = (ctx?.params as { providerId?: unknown } | undefined)?.providerId;
                if (!ctx || session.activeOrganizationId || typeof providerId !== 'string' || !ctx.path.startsWith('/sso/')) return;
                // In the callback's transaction, when it runs in one (the embedded database has one connection).
                const adapter = await getCurrentAdapter(ctx.context.adapter);
                const provider = await adapter.findOne<{ organizationId?: string | null }>({
                  model: 'ssoProvider',
                  where: [{ field: 'providerId', value: providerId }],
                });
                if (!provider?.organizationId) return;
                return { data: { ...session, activeOrganizationId: provider.organizationId } };
              },
            },
          },
        },
      },
    }),
  };
}
