-- The generated function's INSERT branch without its security wrapper: not SECURITY DEFINER (so no
-- SET search_path, and the names schema-qualified instead), no maintenance switch, and a policy
-- that lets the request's role insert events. What the wrapper costs (README.md); not a design,
-- since it lets a request write events of its own.
CREATE POLICY "bench_insert" ON public."authstrap_event" FOR INSERT TO "authstrap_app" WITH CHECK (true);
CREATE OR REPLACE FUNCTION authstrap.data_event() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  request jsonb := COALESCE(NULLIF(current_setting('authstrap.request', true), '')::jsonb, '{}'::jsonb);
  key_id text := NULLIF(current_setting('authstrap.key_id', true), '');
  data jsonb;
  organization_id uuid;
  event_id uuid;
  has_endpoints boolean;
BEGIN
  data := jsonb_build_object('record', CASE WHEN TG_ARGV[2] = '{}' THEN to_jsonb(NEW) ELSE to_jsonb(NEW) - TG_ARGV[2]::text[] END);
  organization_id := (data->'record'->>TG_ARGV[3])::uuid;
  INSERT INTO public."authstrap_event" ("type", "organizationId", "userId", "actorType", "actorId", "entity", "entityId", "data", "requestId", "ipAddress", "userAgent")
  VALUES (TG_ARGV[0] || '.created', organization_id, NULL, COALESCE(request->>'actorType', CASE WHEN authstrap.user_id() IS NOT NULL THEN 'user' WHEN key_id IS NOT NULL THEN 'machine_key' ELSE 'system' END), COALESCE(request->>'actorId', authstrap.user_id()::text, key_id), TG_ARGV[1], NEW."id"::text, data, request->>'requestId', request->>'ipAddress', left(request->>'userAgent', 512))
  RETURNING "id", EXISTS (SELECT FROM public."authstrap_webhook_endpoint" w WHERE w."organizationId" = organization_id AND w."enabled") INTO event_id, has_endpoints;
  RETURN NULL;
END
$$;
