-- Row-level security on all seven tables of public, ENABLEd and FORCEd (so even the owner is held to
-- the policies). A row belongs to the user whose id is in the transaction-local setting app.user_id,
-- which only db/database.ts sets (Database.withUser). Policies are re-created on every run, so a
-- changed definition here always lands; the end state of a second run is identical to the first.

create or replace function auth.current_user_id() returns uuid
  language sql stable parallel safe
  as $$ select nullif(current_setting('app.user_id', true), '')::uuid $$;
grant execute on function auth.current_user_id() to soma_app, soma_auth, soma_system;

-- References to other rows must point at rows the same user can see: foreign keys alone are checked
-- without RLS, so without these a user could attach an edge or a source to another user's row.
create or replace function auth.owns_source(source uuid) returns boolean
  language sql stable
  as $$ select source is null or exists (select 1 from public.sources s where s.id = source) $$;
create or replace function auth.owns_entity(entity uuid) returns boolean
  language sql stable
  as $$ select exists (select 1 from public.entities e where e.id = entity) $$;
grant execute on function auth.owns_source(uuid), auth.owns_entity(uuid) to soma_app;

do $$
declare
  t text;
  owner_check text;
  write_check text;
begin
  foreach t in array array['users', 'oauth_connections', 'entities', 'edges', 'events', 'facts', 'sources'] loop
    execute format('alter table public.%I enable row level security', t);
    execute format('alter table public.%I force row level security', t);

    -- (select …) makes the setting an InitPlan, read once per statement instead of once per row.
    owner_check := case t when 'users' then 'id = (select auth.current_user_id())' else 'user_id = (select auth.current_user_id())' end;
    write_check := owner_check || case
      when t in ('entities', 'events', 'facts') then ' and auth.owns_source(source_id)'
      when t = 'edges' then ' and auth.owns_source(source_id) and auth.owns_entity(from_id) and auth.owns_entity(to_id)'
      else '' end;

    execute format('drop policy if exists %I on public.%I', t || '_select', t);
    execute format('drop policy if exists %I on public.%I', t || '_insert', t);
    execute format('drop policy if exists %I on public.%I', t || '_update', t);
    execute format('drop policy if exists %I on public.%I', t || '_delete', t);
    execute format('create policy %I on public.%I for select using (%s)', t || '_select', t, owner_check);
    execute format('create policy %I on public.%I for insert with check (%s)', t || '_insert', t, write_check);
    execute format('create policy %I on public.%I for update using (%s) with check (%s)', t || '_update', t, owner_check, write_check);
    execute format('create policy %I on public.%I for delete using (%s)', t || '_delete', t, owner_check);
  end loop;
end $$;

-- The names of the person's memories (migration 0025), derived from entities: enabled and not forced,
-- with no policy, so that only their owner reads them — search.name_matches (SECURITY DEFINER), for
-- the person in app.user_id — and every other role is refused even if a grant is ever made.
alter table search.entity_names enable row level security;
alter table search.entity_names no force row level security;

-- soma_system may list people and mail connections (only the columns granted in 0100_roles.sql).
drop policy if exists users_system_select on public.users;
create policy users_system_select on public.users for select to soma_system using (true);
drop policy if exists oauth_connections_system_select on public.oauth_connections;
create policy oauth_connections_system_select on public.oauth_connections for select to soma_system using (true);

-- soma_system may see that a person has a routine of their own (agents/schedules/routines.ts), no other event.
drop policy if exists events_system_select_routines on public.events;
create policy events_system_select_routines on public.events for select to soma_system using (kind = 'routine');

-- soma_system may delete Web Push subscriptions only (db/repositories/push-subscriptions.ts: a device
-- another person subscribed before), never a Google connection.
drop policy if exists oauth_connections_system_delete_push on public.oauth_connections;
create policy oauth_connections_system_delete_push on public.oauth_connections for delete to soma_system
  using (provider like 'webpush:%');
