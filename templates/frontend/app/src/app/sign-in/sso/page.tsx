import { SsoSignInForm } from '@/components/sso-sign-in';

/** "Sign in with SSO"; `?email=` or `?organization=` fills it in (the backend's SSO_REQUIRED refusal links here). */
export default async function SsoSignInPage({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const { email, organization, error } = await searchParams;
  const one = (value: string | string[] | undefined) => (typeof value === 'string' ? value : undefined);
  return <SsoSignInForm email={one(email)} organization={one(organization)} error={one(error)} />;
}
