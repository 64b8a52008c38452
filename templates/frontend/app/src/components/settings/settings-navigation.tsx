'use client';

import Link from 'next/link';
import { usePathname } from 'next/navigation';
import { managesOrganization, useOrganizations } from '@/components/organization-provider';

/** The settings pages, those for owners and admins only shown to them. */
const pages = [
  { href: '/settings/general', label: 'General', managersOnly: false },
  { href: '/settings/members', label: 'Members', managersOnly: false },
  { href: '/settings/invitations', label: 'Invitations', managersOnly: true },
  { href: '/settings/api-keys', label: 'API keys', managersOnly: true },
  { href: '/settings/webhooks', label: 'Webhooks', managersOnly: true },
  { href: '/settings/domains', label: 'Domains', managersOnly: true },
  { href: '/settings/directory', label: 'Directory', managersOnly: true },
  { href: '/settings/audit-log', label: 'Audit log', managersOnly: true },
];

export function SettingsNavigation() {
  const pathname = usePathname();
  const { active } = useOrganizations();
  const manages = managesOrganization(active?.role);
  return (
    <nav aria-label="Organization settings" className="min-w-0">
      <p className="muted mb-2 truncate">{active ? `${active.name} · ${active.role}` : 'Organization'}</p>
      <ul className="flex flex-wrap gap-1 md:flex-col">
        {pages
          .filter((page) => manages || !page.managersOnly)
          .map((page) => (
            <li key={page.href}>
              <Link
                href={page.href}
                aria-current={pathname === page.href ? 'page' : undefined}
                className="block rounded-md px-3 py-2 whitespace-nowrap text-gray-800 no-underline hover:bg-gray-100 aria-[current=page]:bg-gray-100 aria-[current=page]:font-semibold"
              >
                {page.label}
              </Link>
            </li>
          ))}
      </ul>
    </nav>
  );
}
