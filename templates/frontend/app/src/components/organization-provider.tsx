'use client';

import { createContext, useCallback, useContext, useEffect, useState, type ReactNode } from 'react';
import { api } from '@/lib/api';

export interface OrganizationSummary {
  id: string;
  name: string;
  slug: string;
  role: string;
}

interface OrganizationState {
  organizations: OrganizationSummary[];
  /** The organization every tenant-scoped call is made in (the x-organization-id header). */
  active?: OrganizationSummary;
  choose(id: string): void;
  create(name: string): Promise<void>;
}

const OrganizationContext = createContext<OrganizationState | undefined>(undefined);
const storageKey = 'authstrap.organizationId';

/**
 * The signed-in user's organizations, from the backend's own session endpoint, and the one they
 * work in. The choice is kept in localStorage so a reload stays in the same organization.
 */
export function OrganizationProvider({ signedIn, children }: { signedIn: boolean; children: ReactNode }) {
  const [organizations, setOrganizations] = useState<OrganizationSummary[]>([]);
  const [activeId, setActiveId] = useState<string>();

  const load = useCallback(async (prefer?: string) => {
    const organizations = (await api.auth.getSession())?.organizations ?? [];
    setOrganizations(organizations);
    const wanted = prefer ?? localStorage.getItem(storageKey) ?? undefined;
    const active = organizations.find((organization) => organization.id === wanted) ?? organizations[0];
    choose(active?.id);
  }, []);

  useEffect(() => {
    if (signedIn) void load();
  }, [signedIn, load]);

  function choose(id: string | undefined) {
    api.setOrganization(id);
    setActiveId(id);
    if (id) localStorage.setItem(storageKey, id);
  }

  async function create(name: string) {
    const slug = `${name.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '') || 'team'}-${crypto.randomUUID().slice(0, 6)}`;
    const organization = await api.Organization.create({ name, slug });
    await load(organization.id);
  }

  const active = organizations.find((organization) => organization.id === activeId);
  return <OrganizationContext value={{ organizations, active, choose, create }}>{children}</OrganizationContext>;
}

export function useOrganizations(): OrganizationState {
  const state = useContext(OrganizationContext);
  if (!state) throw new Error('useOrganizations() needs an <OrganizationProvider> above it (see app/layout.tsx)');
  return state;
}
