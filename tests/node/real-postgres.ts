// A throwaway real PostgreSQL server for tests whose subject PGlite cannot stand in for (roles and
// authentication, privileges without a superuser). Debian's postgresql package: initdb under
// /usr/lib/postgresql/<n>/bin, run as the postgres user when the tests run as root. No pgvector.
import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "./helpers";

export interface RealPostgres {
  /** The bootstrap superuser's URL (password auth for every role, over TCP on 127.0.0.1). */
  url: string;
  /** `url` as another role. */
  as(role: string, password: string): string;
  stop(): void;
}

function findPostgres(): { version: string; run: (program: string, args: string[]) => void } | null {
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return null;
  const version = readdirSync(root)
    .sort((a, b) => Number(b) - Number(a))
    .find((v) => existsSync(join(root, v, "bin", "initdb")));
  if (!version) return null;
  const bin = join(root, version, "bin");
  const asRoot = process.getuid?.() === 0;
  if (asRoot && spawnSync("id", ["postgres"]).status !== 0) return null;
  return {
    version,
    run: (program, args) => {
      const [command, argv] = asRoot ? ["runuser", ["-u", "postgres", "--", join(bin, program), ...args]] : [join(bin, program), args];
      execFileSync(command as string, argv as string[], { stdio: "ignore" });
    },
  };
}

const installed = findPostgres();
export const realPostgresInstalled = installed !== null;
/** Whether that server also has pgvector (built from its source: the README's bench section). */
export const realPgvectorInstalled =
  installed !== null && existsSync(`/usr/share/postgresql/${installed.version}/extension/vector.control`);

/** Starts a new cluster that checks passwords (scram-sha-256) for every TCP connection. */
export async function startRealPostgres(): Promise<RealPostgres> {
  if (!installed) throw new Error("no PostgreSQL installed");
  const dir = mkdtempSync(join(tmpdir(), "soma-pg-"));
  chmodSync(dir, 0o777);
  const port = await freePort();
  const superPassword = "bootstrap-superuser-password";
  const pwfile = join(dir, "pw");
  execFileSync("sh", ["-c", `printf '%s' '${superPassword}' > ${pwfile} && chmod 644 ${pwfile}`]);
  installed.run("initdb", ["-D", join(dir, "data"), "-A", "scram-sha-256", "-U", "postgres", `--pwfile=${pwfile}`]);
  installed.run("pg_ctl", [
    "-D",
    join(dir, "data"),
    "-w",
    "-l",
    join(dir, "log"),
    "-o",
    `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1`,
    "start",
  ]);
  const as = (role: string, password: string) =>
    `postgres://${encodeURIComponent(role)}:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`;
  return {
    url: as("postgres", superPassword),
    as,
    stop() {
      try {
        installed.run("pg_ctl", ["-D", join(dir, "data"), "-m", "immediate", "stop"]);
      } catch {
        // not running
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
