import { ApiKeysSettings } from '@/components/settings/api-keys';

/** The organization's settings: machine keys for scripts and services. */
export default function Page() {
  return <ApiKeysSettings />;
}
