import { OperatorOrganizationDetail } from '@/components/operator/organization';

/** One organization: its members, invitations, machine keys, webhook endpoints and audit log, and the operator's actions. */
export default async function Page({ params }: { params: Promise<{ id: string }> }) {
  const { id } = await params;
  return <OperatorOrganizationDetail id={id} />;
}
