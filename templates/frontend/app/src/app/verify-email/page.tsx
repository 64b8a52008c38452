import { VerifyEmailStatus } from '@/components/account-forms';

/**
 * Where a confirmation link ends. Better Auth's link has confirmed the address on its way here
 * (`?error=` when it could not); a link the backend mailed itself carries `?token=`, confirmed here.
 */
export default async function VerifyEmailPage({ searchParams }: { searchParams: Promise<{ token?: string; error?: string }> }) {
  const { token, error } = await searchParams;
  return <VerifyEmailStatus token={token} failed={error !== undefined} />;
}
