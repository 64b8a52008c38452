import { OperatorUsers } from '@/components/operator/users';

/** Every user of the platform, searched by address, name or id. */
export default function Page() {
  return <OperatorUsers />;
}
