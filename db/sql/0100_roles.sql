-- Roles the application switches to inside each transaction (SET LOCAL ROLE through set_config).
-- None of them can log in, none is a superuser, none has BYPASSRLS, none owns a table:
--   soma_app     user data, always with app.user_id set; row-level security decides what it sees
--   soma_auth    sign-in only: the auth schema, nothing in public
--   soma_system  the few cross-user reads of background jobs (who to fan out to), by column
do $$
declare r text;
begin
  foreach r in array array['soma_app', 'soma_auth', 'soma_system'] loop
    if not exists (select 1 from pg_roles where rolname = r) then
      execute format('create role %I nologin nosuperuser nobypassrls noinherit', r);
    end if;
    -- The connecting (owner) role must be a member to SET ROLE into it.
    if not pg_has_role(current_user, r, 'MEMBER') then
      execute format('grant %I to %I', r, current_user);
    end if;
  end loop;
end $$;

grant usage on schema public to soma_app, soma_system;
grant usage on schema auth to soma_app, soma_auth, soma_system;

-- soma_app reads the person's row and deletes it with the account; it never updates it (the auth
-- mirror, running as the owner, keeps it in step with auth.users). The revoke takes back the UPDATE
-- that earlier setups granted.
grant select, delete on public.users to soma_app;
revoke update on public.users from soma_app;
grant select, insert, update, delete on
  public.oauth_connections, public.entities, public.edges, public.events, public.facts, public.sources
  to soma_app;

-- The names of the person's memories (migration 0025): recall matches a question's words through
-- search.name_matches, which answers for the person in app.user_id only; the table itself is the
-- owner's (its trigger on entities writes it), never granted.
grant usage on schema search to soma_app;
grant execute on function search.name_matches(tsquery) to soma_app;

grant select, insert, update, delete on auth.users, auth.sessions, auth.login_tokens to soma_auth;
-- Account tombstones and the once-a-day group notice are sign-in decisions of the Telegram and Google doors.
grant select, insert, update, delete on auth.deleted_people, auth.group_chat_notices to soma_auth;

grant select (id, timezone, telegram_chat_id, created_at) on public.users to soma_system;
grant select (user_id, provider, account_email, watch_expires_at) on public.oauth_connections to soma_system;
-- Whether a person moved their brief or review (a 'routine' events row): the fan-out leaves them out.
grant select (user_id, kind, idempotency_key) on public.events to soma_system;

-- The login role the Worker connects as (Hyperdrive's connection string; npm start's too). db:setup
-- passes its name and password verifier in soma.worker_role / soma.worker_password (never the
-- password itself). It is NOINHERIT and a member of the three roles above only: on its own it can
-- read and change nothing, so a statement that resets or switches the role (RESET ROLE, SET ROLE)
-- lands on no privileges at all, and it cannot become the owner, bypass RLS or alter anything.
do $$
declare
  login text := coalesce(nullif(current_setting('soma.worker_role', true), ''), 'soma_worker');
  verifier text := nullif(current_setting('soma.worker_password', true), '');
  account record;
  other text;
begin
  if login = current_user or login = session_user or login in ('soma_app', 'soma_auth', 'soma_system') then
    raise exception 'the Worker''s login role (%) must be a role of its own, not the setup role or an application role', login;
  end if;
  if not exists (select 1 from pg_roles where rolname = login) then
    execute format('create role %I login noinherit nosuperuser nocreatedb nocreaterole nobypassrls noreplication', login);
  end if;
  select * into account from pg_roles where rolname = login;
  -- Only attributes that are wrong are named: ALTER ROLE … NOSUPERUSER/NOBYPASSRLS needs a superuser
  -- even when nothing changes, and managed databases give the setup role none.
  if account.rolsuper then execute format('alter role %I nosuperuser', login); end if;
  if account.rolbypassrls then execute format('alter role %I nobypassrls', login); end if;
  if account.rolreplication then execute format('alter role %I noreplication', login); end if;
  if account.rolinherit or account.rolcreatedb or account.rolcreaterole or not account.rolcanlogin then
    execute format('alter role %I login noinherit nocreatedb nocreaterole', login);
  end if;
  if verifier is not null then
    execute format('alter role %I password %L', login, verifier);
  end if;
  for other in
    select g.rolname from pg_auth_members m join pg_roles g on g.oid = m.roleid join pg_roles r on r.oid = m.member
    where r.rolname = login and g.rolname not in ('soma_app', 'soma_auth', 'soma_system')
  loop
    execute format('revoke %I from %I', other, login);
  end loop;
  execute format('grant soma_app, soma_auth, soma_system to %I', login);
  if exists (select 1 from pg_class c join pg_roles r on r.oid = c.relowner where r.rolname = login)
     or exists (select 1 from pg_namespace n join pg_roles r on r.oid = n.nspowner where r.rolname = login)
     or exists (select 1 from pg_proc p join pg_roles r on r.oid = p.proowner where r.rolname = login) then
    raise exception 'the Worker''s login role % owns objects in this database; reassign them (REASSIGN OWNED BY %) and run db:setup again', login, login;
  end if;
end $$;

-- No role may create objects in public on a database created before PostgreSQL 15.
revoke create on schema public from public;

-- A browser's push subscription belongs to whoever subscribed it last: soma_system deletes another
-- person's row of the same endpoint (policy in 0200_rls.sql: Web Push rows only) before it is saved.
grant delete on public.oauth_connections to soma_system;
