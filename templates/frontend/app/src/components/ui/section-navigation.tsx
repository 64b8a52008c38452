'use client';

import Link from 'next/link';
import { usePathname } from 'next/navigation';
import type { ReactNode } from 'react';

/**
 * A section's own navigation beside its pages (the organization's settings, the operator's pages):
 * a column on a laptop, a wrapped row on a phone; the page open is marked for screen readers too.
 * `current` says which link is open on a page below another (a user's page under Users).
 */
export function SectionNavigation({ label, caption, pages }: { label: string; caption: ReactNode; pages: { href: string; label: string }[] }) {
  const pathname = usePathname();
  const current = (href: string) => pathname === href || pathname.startsWith(`${href}/`);
  return (
    <nav aria-label={label} className="min-w-0">
      <p className="muted mb-2 truncate">{caption}</p>
      <ul className="flex flex-wrap gap-1 md:flex-col">
        {pages.map((page) => (
          <li key={page.href}>
            <Link
              href={page.href}
              aria-current={current(page.href) ? 'page' : undefined}
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
