import { ResetPasswordForm } from '@/components/account-forms';

/** Where a reset link ends: `?token=` (or `?error=` when Better Auth found the link used or expired). */
export default async function ResetPasswordPage({ searchParams }: { searchParams: Promise<{ token?: string; error?: string }> }) {
  const { token, error } = await searchParams;
  return <ResetPasswordForm token={error ? undefined : token} />;
}
