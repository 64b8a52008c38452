import { AuthForm } from '@/components/auth-form';

/** Sign-in; `?error=<CODE>` is a single sign-on the backend refused (docs/sso.md), said in words. */
export default async function SignInPage({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const { error } = await searchParams;
  return <AuthForm mode="sign-in" ssoError={typeof error === 'string' ? error : undefined} />;
}
