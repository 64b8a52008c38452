import { SsoSettings } from '@/components/settings/sso';

/** The organization's settings: its single sign-on connections and the policy that requires them. */
export default function Page() {
  return <SsoSettings />;
}
