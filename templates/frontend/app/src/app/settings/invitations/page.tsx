import { InvitationsSettings } from '@/components/settings/invitations';

/** The organization's settings: inviting people by e-mail. */
export default function Page() {
  return <InvitationsSettings />;
}
