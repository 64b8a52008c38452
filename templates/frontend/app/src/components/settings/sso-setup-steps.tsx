import type { ReactNode } from 'react';
import type { SsoConnection, SsoPreset } from '@/lib/authstrap-client';

/** The identity providers the add form offers, each as an IdP's admin knows it. */
export const identityProviders: { value: string; label: string; preset: SsoPreset; protocol: SsoConnection['protocol'] }[] = [
  { value: 'okta-oidc', label: 'Okta (OpenID Connect)', preset: 'okta', protocol: 'oidc' },
  { value: 'okta-saml', label: 'Okta (SAML)', preset: 'okta', protocol: 'saml' },
  { value: 'entra-oidc', label: 'Microsoft Entra ID (OpenID Connect)', preset: 'entra', protocol: 'oidc' },
  { value: 'entra-saml', label: 'Microsoft Entra ID (SAML)', preset: 'entra', protocol: 'saml' },
  { value: 'google-oidc', label: 'Google Workspace (OpenID Connect)', preset: 'google', protocol: 'oidc' },
  { value: 'google-saml', label: 'Google Workspace (SAML)', preset: 'google', protocol: 'saml' },
  { value: 'generic-oidc', label: 'Another OpenID Connect provider', preset: 'generic', protocol: 'oidc' },
  { value: 'generic-saml', label: 'Another SAML 2.0 provider', preset: 'generic', protocol: 'saml' },
];

/** A connection's provider as a heading names it: "Okta", or "Another SAML provider". */
export const providerName = (connection: Pick<SsoConnection, 'preset' | 'protocol'>) =>
  connection.preset === 'generic' ? `Another ${connection.protocol === 'oidc' ? 'OpenID Connect' : 'SAML'} provider` : presetLabel(connection.preset);

export const presetLabel = (preset: SsoPreset) => ({ okta: 'Okta', entra: 'Microsoft Entra ID', google: 'Google Workspace', generic: 'your identity provider' })[preset];

/**
 * Where sign-in looks for each attribute when the mapping leaves it empty (the backend's defaults,
 * docs/sso.md): shown beside the mapping's fields, so that an admin changes only what differs.
 */
export const defaultAttributes: Record<SsoConnection['protocol'], Record<'subject' | 'email' | 'name' | 'givenName' | 'familyName' | 'groups', string>> = {
  oidc: { subject: 'sub', email: 'email', name: 'name', givenName: 'given_name', familyName: 'family_name', groups: 'groups' },
  saml: {
    subject: 'the NameID',
    email: 'email, mail, or the e-mail address claim',
    name: 'displayName, name, or the display name claim',
    givenName: 'givenName, firstName',
    familyName: 'sn, surname, lastName',
    groups: 'groups, memberOf',
  },
};

/** What to do first, at the IdP, before the connection exists (its SP values are known once it does). */
export function BeforeAdding({ preset, protocol }: { preset: SsoPreset; protocol: SsoConnection['protocol'] }) {
  const idp = presetLabel(preset);
  if (protocol === 'oidc') {
    const where = {
      okta: 'In Okta: Applications, Create App Integration, OIDC - OpenID Connect, Web Application. Grant type: Authorization Code.',
      entra: 'In the Microsoft Entra admin center: App registrations, New registration, Web platform. Then Certificates & secrets, New client secret.',
      google: 'In Google Cloud (the Workspace organization): APIs & Services, Credentials, Create OAuth client ID, Web application.',
      generic: 'At your provider: a confidential web client with the authorization code grant (with PKCE), scopes openid email profile.',
    }[preset];
    const issuer = {
      okta: 'https://<your-org>.okta.com (or the authorization server’s, …/oauth2/default)',
      entra: 'https://login.microsoftonline.com/<tenant id>/v2.0 — and the tenant id below',
      google: 'https://accounts.google.com — and your Workspace domain below',
      generic: 'the issuer its discovery document names',
    }[preset];
    return (
      <ol className="grid list-decimal gap-1 pl-5 text-sm">
        <li>{where} For the redirect URI, put a placeholder for now.</li>
        <li>
          Copy its client id and client secret into the form below. Issuer: <span className="wrap-anywhere">{issuer}</span>.
        </li>
        <li>Add the connection: its redirect URI appears here. Paste it into {idp} in place of the placeholder.</li>
        <li>Assign the people (or groups) who may sign in, then test the connection here and enable it.</li>
      </ol>
    );
  }
  const where = {
    okta: 'In Okta: Applications, Create App Integration, SAML 2.0.',
    entra: 'In the Microsoft Entra admin center: Enterprise applications, New application, Create your own application, then Single sign-on, SAML.',
    google: 'In the Google Admin console: Apps, Web and mobile apps, Add app, Add custom SAML app.',
    generic: 'At your provider: a SAML 2.0 application (service provider).',
  }[preset];
  return (
    <ol className="grid list-decimal gap-1 pl-5 text-sm">
      <li>{where} For the ACS URL and the entity ID, put placeholders for now.</li>
      <li>Sign the assertion (not only the response) with SHA-256; send the e-mail address as an attribute or as the NameID.</li>
      <li>Give the form below the IdP&apos;s metadata: its URL, or the XML file downloaded from {presetLabel(preset)}.</li>
      <li>Add the connection: its SP entity ID, ACS URL and SP metadata appear here. Replace the placeholders with them, test here, and enable.</li>
    </ol>
  );
}

/** A value the IdP's admin pastes, named as the IdP's own page names the field. */
function Field({ label, children }: { label: string; children: ReactNode }) {
  return (
    <li>
      <span className="font-medium">{label}</span>: {children}
    </li>
  );
}

/** Field by field, what goes where at the IdP for this connection (its own SP values). */
export function SetupSteps({ connection }: { connection: SsoConnection }) {
  const sp = connection.serviceProvider;
  const value = (text: string | undefined) => <code className="break-all">{text}</code>;
  let steps: ReactNode;
  if (connection.protocol === 'oidc') {
    const field = { okta: 'Sign-in redirect URIs', entra: 'Authentication, Web, Redirect URIs', google: 'Authorized redirect URIs', generic: 'Redirect URI' }[connection.preset];
    steps = (
      <ul className="grid gap-1 pl-5 text-sm">
        <Field label={field}>{value(sp.redirectUri)}</Field>
        <Field label="Scopes">{value(connection.oidcScopes)}</Field>
        {connection.preset === 'okta' && <Field label="Assignments">the people or groups who may sign in</Field>}
        {connection.preset === 'entra' && <Field label="Token configuration">add the optional claim email (else the address comes as preferred_username)</Field>}
        {connection.preset === 'google' && <Field label="Tenant">every ID token must carry your Workspace domain as hd</Field>}
      </ul>
    );
  } else {
    const [entityField, acsField] = {
      okta: ['Audience URI (SP Entity ID)', 'Single sign-on URL'],
      entra: ['Identifier (Entity ID)', 'Reply URL (Assertion Consumer Service URL)'],
      google: ['Entity ID', 'ACS URL'],
      generic: ['SP entity ID / audience', 'ACS URL (HTTP-POST)'],
    }[connection.preset];
    steps = (
      <ul className="grid gap-1 pl-5 text-sm">
        <Field label={entityField}>{value(sp.entityId)}</Field>
        <Field label={acsField}>{value(sp.acsUrl)}</Field>
        <Field label="Or upload the SP metadata">{value(sp.metadataUrl)}</Field>
        <Field label="Name ID">a stable identifier (the e-mail address is fine)</Field>
        <Field label="Signing">sign the assertion, RSA or ECDSA with SHA-256</Field>
      </ul>
    );
  }
  return (
    <details className="rounded-md border border-gray-200 bg-white px-3 py-2">
      <summary className="cursor-pointer text-sm font-medium text-gray-900">Set up {presetLabel(connection.preset)}</summary>
      <div className="mt-3 grid gap-2">{steps}</div>
    </details>
  );
}
