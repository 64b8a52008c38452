import { OperatorUserDetail } from '@/components/operator/user';

/** One user: their organizations, sessions, sign-ins and state, and the operator's actions. */
export default async function Page({ params }: { params: Promise<{ id: string }> }) {
  const { id } = await params;
  return <OperatorUserDetail id={id} />;
}
