-- updated_at bookkeeping and the auth mirror (auth.users → public.users). Idempotent.

create or replace function auth.touch_updated_at() returns trigger
  language plpgsql
  as $$ begin new.updated_at := now(); return new; end $$;

create or replace trigger users_touch before update on public.users
  for each row execute function auth.touch_updated_at();
create or replace trigger oauth_connections_touch before update on public.oauth_connections
  for each row execute function auth.touch_updated_at();
-- A memory's updated_at says when it changed for the person: recall ranks recency by it and lists go
-- newest first. Filling in the embedding it was stored without (memory-consolidate's backfill after
-- an import or an embedder outage) changes nothing they said, so it leaves updated_at alone. Generated
-- columns are left out of the comparison: a BEFORE trigger does not see them computed yet.
create or replace function auth.touch_memory_updated_at() returns trigger
  language plpgsql
  as $$
begin
  if old.embedding is null and new.embedding is not null
     and to_jsonb(new) - array['embedding', 'updated_at', 'search_name', 'search', 'search_key', 'recall_at', 'sketch']
       = to_jsonb(old) - array['embedding', 'updated_at', 'search_name', 'search', 'search_key', 'recall_at', 'sketch'] then
    return new;
  end if;
  new.updated_at := now();
  return new;
end $$;

create or replace trigger entities_touch before update on public.entities
  for each row execute function auth.touch_memory_updated_at();
create or replace trigger facts_touch before update on public.facts
  for each row execute function auth.touch_memory_updated_at();

-- The mirror runs as the owner (security definer). public.users forces RLS on the owner too, so the
-- function acts as the new user for the one statement, then restores the caller's setting.
create or replace function auth.mirror_user() returns trigger
  language plpgsql security definer set search_path = pg_catalog, public, auth
  as $$
declare previous text := current_setting('app.user_id', true);
begin
  perform set_config('app.user_id', new.id::text, true);
  insert into public.users (id, display_name, timezone, telegram_user_id, telegram_chat_id, notify, created_at)
  values (new.id, new.display_name, new.timezone, new.telegram_user_id, new.telegram_chat_id, new.notify, new.created_at)
  on conflict (id) do update set
    display_name = excluded.display_name,
    timezone = excluded.timezone,
    telegram_user_id = excluded.telegram_user_id,
    telegram_chat_id = excluded.telegram_chat_id,
    notify = excluded.notify;
  perform set_config('app.user_id', coalesce(previous, ''), true);
  return new;
end $$;
revoke all on function auth.mirror_user() from public;

create or replace trigger users_mirror after insert or update on auth.users
  for each row execute function auth.mirror_user();
