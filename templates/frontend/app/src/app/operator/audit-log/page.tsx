import { PlatformLog } from '@/components/operator/platform-log';

/** The platform's log: what operators did. */
export default function Page() {
  return <PlatformLog />;
}
