'use client';

import { managesOrganization, useOrganizations } from '@/components/organization-provider';
import { SectionNavigation } from '@/components/ui/section-navigation';

/** The settings pages, those for owners and admins only shown to them. */
const pages = [
  { href: '/settings/general', label: 'General', managersOnly: false },
  { href: '/settings/members', label: 'Members', managersOnly: false },
  { href: '/settings/invitations', label: 'Invitations', managersOnly: true },
  { href: '/settings/api-keys', label: 'API keys', managersOnly: true },
  { href: '/settings/webhooks', label: 'Webhooks', managersOnly: true },
  { href: '/settings/domains', label: 'Domains', managersOnly: true },
  { href: '/settings/sso', label: 'Single sign-on', managersOnly: true },
  { href: '/settings/directory', label: 'Directory', managersOnly: true },
  { href: '/settings/audit-log', label: 'Audit log', managersOnly: true },
];

export function SettingsNavigation() {
  const { active } = useOrganizations();
  const manages = managesOrganization(active?.role);
  return (
    <SectionNavigation
      label="Organization settings"
      caption={active ? `${active.name} · ${active.role}` : 'Organization'}
      pages={pages.filter((page) => manages || !page.managersOnly)}
    />
  );
}
