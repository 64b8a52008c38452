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
  /** The signed-in user's id (from the backend's session); undefined until it is read. */
  userId?: string;
  /** False until the organizations are first read: pages wait for it before deciding what a role may see. */
  loaded: boolean;
  organizations: OrganizationSummary[];
  /** The organization every tenant-scoped call is made in (the x-organization-id header). */
  active?: OrganizationSummary;
  choose(id: string): void;
  create(name: string): Promise<void>;
  /** Reads the organizations again (after a rename, a role change, leaving or deleting one). */
  refresh(): Promise<void>;
}

const OrganizationContext = createContext<OrganizationState | undefined>(undefined);
const storageKey = 'authstrap.organizationId';

/** Makes `id` the organization the app opens in next (e.g. the one an invitation joined). */
export const rememberOrganization = (id: string) => localStorage.setItem(storageKey, id);

/** Whether a role manages an organization: its settings, people, invitations and keys. */
export const managesOrganization = (role: string | undefined) => role === 'owner' || role === 'admin';

/**
 * The signed-in user's organizations, from the backend's own session endpoint, and the one they
 * work in. The choice is kept in localStorage so a reload stays in the same organization. Inside
 * another provider (the settings pages in an app whose layout has one) it adds nothing.
 */
export function OrganizationProvider({ signedIn, children }: { signedIn: boolean; children: ReactNode }) {
  const outer = useContext(OrganizationContext);
  return outer ? children : <OwnOrganizationProvider signedIn={signedIn}>{children}</OwnOrganizationProvider>;
}

function OwnOrganizationProvider({ signedIn, children }: { signedIn: boolean; children: ReactNode }) {
  const [organizations, setOrganizations] = useState<OrganizationSummary[]>([]);
  const [activeId, setActiveId] = useState<string>();
  const [userId, setUserId] = useState<string>();
  const [loaded, setLoaded] = useState(false);

  const load = useCallback(async (prefer?: string) => {
    const session = await api.auth.getSession();
    const organizations = session?.organizations ?? [];
    setUserId(session?.user.id);
    setOrganizations(organizations);
    const wanted = prefer ?? localStorage.getItem(storageKey) ?? undefined;
    // This browser's last choice; else the session's own (a single sign-on lands in its organization).
    const active =
      organizations.find((organization) => organization.id === wanted) ??
      organizations.find((organization) => organization.id === session?.session.activeOrganizationId) ??
      organizations[0];
    choose(active?.id);
    setLoaded(true);
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
  const refresh = useCallback(() => load(), [load]);
  return <OrganizationContext value={{ userId, loaded, organizations, active, choose, create, refresh }}>{children}</OrganizationContext>;
}

export function useOrganizations(): OrganizationState {
  const state = useContext(OrganizationContext);
  if (!state) throw new Error('useOrganizations() needs an <OrganizationProvider> above it (see app/layout.tsx)');
  return state;
}
