import { GeneralSettings } from '@/components/settings/general';

/** The organization's settings: name and slug; deleting it. */
export default function Page() {
  return <GeneralSettings />;
}
