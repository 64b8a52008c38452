import { AuthForm } from '@/components/auth-form';

export default function SignInPage() {
  return <AuthForm mode="sign-in" />;
}
