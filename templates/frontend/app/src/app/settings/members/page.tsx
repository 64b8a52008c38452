import { MembersSettings } from '@/components/settings/members';

/** The organization's settings: who belongs to it, and their roles. */
export default function Page() {
  return <MembersSettings />;
}
