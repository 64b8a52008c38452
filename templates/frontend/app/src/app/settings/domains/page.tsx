import { DomainsSettings } from '@/components/settings/domains';

/** The organization's settings: the domains it claims, and the DNS records that prove them. */
export default function Page() {
  return <DomainsSettings />;
}
