import { DirectorySettings } from '@/components/settings/directory';

/** The organization's settings: the identity provider that provisions its members (SCIM). */
export default function Page() {
  return <DirectorySettings />;
}
