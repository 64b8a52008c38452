import { WebhooksSettings } from '@/components/settings/webhooks';

/** The organization's settings: webhook endpoints and their delivery logs. */
export default function Page() {
  return <WebhooksSettings />;
}
