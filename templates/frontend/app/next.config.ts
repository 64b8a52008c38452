import type { NextConfig } from 'next';

const nextConfig: NextConfig = {
  // This folder is the app's root, even when a lockfile sits in a folder above it.
  turbopack: { root: import.meta.dirname },
  outputFileTracingRoot: import.meta.dirname,
};

export default nextConfig;
