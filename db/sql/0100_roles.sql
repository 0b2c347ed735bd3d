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

grant select, update, delete on public.users to soma_app;
grant select, insert, update, delete on
  public.oauth_connections, public.entities, public.edges, public.events, public.facts, public.sources
  to soma_app;

grant select, insert, update, delete on auth.users, auth.sessions, auth.login_tokens to soma_auth;
-- Account tombstones and the once-a-day group notice are sign-in decisions of the Telegram and Google doors.
grant select, insert, update, delete on auth.deleted_people, auth.group_chat_notices to soma_auth;

grant select (id, timezone, telegram_chat_id, created_at) on public.users to soma_system;
grant select (user_id, provider, account_email, watch_expires_at) on public.oauth_connections to soma_system;
