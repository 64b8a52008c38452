import { OperatorOverviewPage } from '@/components/operator/overview';

/** The platform at a glance: sign-ups, active users and new organizations per day, and what needs attention. */
export default function Page() {
  return <OperatorOverviewPage />;
}
