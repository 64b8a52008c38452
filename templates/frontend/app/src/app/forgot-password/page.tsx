import { ForgotPasswordForm } from '@/components/account-forms';

export default function ForgotPasswordPage() {
  return <ForgotPasswordForm />;
}
