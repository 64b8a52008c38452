import { redirect } from 'next/navigation';
import type { ReactNode } from 'react';
import { OrganizationProvider } from '@/components/organization-provider';
import { SettingsNavigation } from '@/components/settings/settings-navigation';
import { currentSession } from '@/lib/session';

/** The organization's settings: signed in only; the navigation shows the pages the user's role may use. */
export default async function SettingsLayout({ children }: { children: ReactNode }) {
  const session = await currentSession();
  if (!session) redirect('/sign-in');
  return (
    <OrganizationProvider signedIn>
      <div className="grid gap-6 md:grid-cols-[12rem_1fr]">
        <SettingsNavigation />
        <div className="min-w-0">{children}</div>
      </div>
    </OrganizationProvider>
  );
}
