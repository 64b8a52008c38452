import { OperatorOrganizations } from '@/components/operator/organizations';

/** Every organization, searched by name, slug, id or a member's address. */
export default function Page() {
  return <OperatorOrganizations />;
}
