// The person's time: which IANA zone a "/timezone <zone or city>" names, what their clock shows, and
// which instant a local "2026-11-24T09:00" is where they are. Built on Intl (ICU in workerd, Node and
// browsers) only; stored times are always UTC, a zone only says how to read and show them.
// (The person's stored zone is read by personZone, db/repositories/people.ts.)

/** Cities people name that are not the last part of a zone name (kept modest: the big ones). */
const CITY_ALIASES: Record<string, string> = {
  "san francisco": "America/Los_Angeles",
  seattle: "America/Los_Angeles",
  "san diego": "America/Los_Angeles",
  "las vegas": "America/Los_Angeles",
  boston: "America/New_York",
  washington: "America/New_York",
  "washington dc": "America/New_York",
  miami: "America/New_York",
  atlanta: "America/New_York",
  philadelphia: "America/New_York",
  houston: "America/Chicago",
  dallas: "America/Chicago",
  austin: "America/Chicago",
  montreal: "America/Toronto",
  "rio de janeiro": "America/Sao_Paulo",
  munich: "Europe/Berlin",
  hamburg: "Europe/Berlin",
  frankfurt: "Europe/Berlin",
  cologne: "Europe/Berlin",
  barcelona: "Europe/Madrid",
  milan: "Europe/Rome",
  geneva: "Europe/Zurich",
  "st petersburg": "Europe/Moscow",
  "saint petersburg": "Europe/Moscow",
  kyiv: "Europe/Kyiv",
  beijing: "Asia/Shanghai",
  shenzhen: "Asia/Shanghai",
  mumbai: "Asia/Kolkata",
  delhi: "Asia/Kolkata",
  "new delhi": "Asia/Kolkata",
  bangalore: "Asia/Kolkata",
  kolkata: "Asia/Kolkata",
  "ho chi minh city": "Asia/Ho_Chi_Minh",
  osaka: "Asia/Tokyo",
  kyoto: "Asia/Tokyo",
  canberra: "Australia/Sydney",
  wellington: "Pacific/Auckland",
  utc: "UTC",
  gmt: "UTC",
};

/** Names, never offsets: "+02:00" as a zone means opposite things to Intl and to Postgres's POSIX rules. */
const ZONE_NAME = /^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+)*$/;

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterFor(zone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(zone);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat("en-US", {
      timeZone: zone,
      hourCycle: "h23",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
      weekday: "short",
    });
    formatters.set(zone, formatter);
  }
  return formatter;
}

/** Whether `zone` is an IANA zone name this runtime knows. */
function isTimeZone(zone: string): boolean {
  if (!ZONE_NAME.test(zone)) return false;
  try {
    formatterFor(zone);
    return true;
  } catch {
    return false;
  }
}

/** "sao paulo", "São Paulo", "Sao_Paulo" and "SAO-PAULO" all fold to "sao paulo". */
function fold(text: string): string {
  return text
    .normalize("NFD")
    .replace(/\p{M}/gu, "")
    .toLowerCase()
    .replace(/[\s_.-]+/g, " ")
    .trim();
}

let byCity: Map<string, string> | undefined;
let byName: Map<string, string> | undefined;

function zoneIndexes(): { byCity: Map<string, string>; byName: Map<string, string> } {
  if (!byCity || !byName) {
    byCity = new Map();
    byName = new Map();
    for (const zone of Intl.supportedValuesOf("timeZone")) {
      byName.set(zone.toLowerCase(), zone);
      const city = fold(zone.split("/").at(-1)!);
      // The first zone with a city name keeps it (Intl lists canonical zones, few names repeat).
      if (!byCity.has(city)) byCity.set(city, zone);
    }
  }
  return { byCity, byName };
}

/**
 * The IANA zone `input` names — a zone name in any case ("europe/berlin"), a city that ends a zone
 * name ("berlin", "New York", "sao paulo") or a common city that does not ("Munich") — or null.
 */
export function resolveTimeZone(input: string): string | null {
  const text = input.trim();
  if (!text || text.length > 64) return null;
  const { byCity, byName } = zoneIndexes();
  const listed = byName.get(text.toLowerCase());
  if (listed) return listed;
  const zone = CITY_ALIASES[fold(text)] ?? byCity.get(fold(text));
  if (zone && isTimeZone(zone)) return zone;
  if (text.includes("/") && isTimeZone(text)) {
    // A zone Intl knows but does not list ("Asia/Kolkata", "US/Pacific"): as typed when it is written
    // like a zone name, else in the runtime's canonical spelling.
    return text.split("/").every((part) => /^[A-Z]/.test(part)) ? text : formatterFor(text).resolvedOptions().timeZone;
  }
  return null;
}

interface WallTime {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
  /** 1 = Monday … 7 = Sunday (ISO). */
  weekday: number;
}

const WEEKDAYS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];

/** What a clock in `zone` shows at `instant`. */
function wallTime(instant: Date, zone: string): WallTime {
  const parts = Object.fromEntries(
    formatterFor(zone)
      .formatToParts(instant)
      .map((p) => [p.type, p.value]),
  );
  return {
    year: Number(parts.year),
    month: Number(parts.month),
    day: Number(parts.day),
    hour: Number(parts.hour),
    minute: Number(parts.minute),
    second: Number(parts.second),
    weekday: WEEKDAYS.indexOf(parts.weekday ?? "") + 1,
  };
}

/** `zone`'s offset from UTC at `instant`, in milliseconds (Berlin in winter: +3 600 000). */
function offsetAt(instant: number, zone: string): number {
  const t = wallTime(new Date(instant), zone);
  return Date.UTC(t.year, t.month - 1, t.day, t.hour, t.minute, t.second) - Math.floor(instant / 1000) * 1000;
}

/**
 * The instant a clock in `zone` shows `local` ("2026-11-24T09:00[:ss]"). Around a change of the
 * clocks it reads like a person would: a time the clocks skip (02:30 when they jump from 02:00 to
 * 03:00) is that long after the jump (03:30), and a time that happens twice is the first one.
 */
export function localToInstant(local: string, zone: string): Date {
  const match = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?$/.exec(local);
  if (!match) throw new RangeError(`not a local date and time: ${local}`);
  const [year, month, day, hour, minute, second] = match.slice(1).map((n) => Number(n ?? 0)) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const asUtc = Date.UTC(year, month - 1, day, hour, minute, second);
  const before = offsetAt(asUtc - 86_400_000, zone);
  const after = offsetAt(asUtc + 86_400_000, zone);
  const fits = [...new Set([before, after])].map((offset) => asUtc - offset).filter((t) => offsetAt(t, zone) === asUtc - t);
  if (fits.length > 0) return new Date(Math.min(...fits));
  return new Date(asUtc - before);
}

/** "Tue 24 Nov, 09:00" in `zone`: how reminders are listed to the person. */
export function formatLocal(instant: Date, zone: string): string {
  return instant.toLocaleString("en-GB", {
    timeZone: zone,
    weekday: "short",
    day: "numeric",
    month: "short",
    hour: "2-digit",
    minute: "2-digit",
    hourCycle: "h23",
  });
}

/** "09:00" in `zone` (in UTC when the runtime does not know `zone`): the time of day the morning brief lists. */
export function formatLocalTime(instant: Date, zone: string): string {
  try {
    return instant.toLocaleTimeString("en-GB", { timeZone: zone, hour: "2-digit", minute: "2-digit" });
  } catch {
    return instant.toISOString().slice(11, 16);
  }
}

/** "2026-11-24": the date a clock in `zone` shows at `instant`. */
export function localDate(instant: Date, zone: string): string {
  return isoLocal(instant, zone).slice(0, 10);
}

/** "2026-11-24T08:15": the local date and time in `zone`, in the form schedule_create accepts. */
export function isoLocal(instant: Date, zone: string): string {
  const t = wallTime(instant, zone);
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${t.year}-${pad(t.month)}-${pad(t.day)}T${pad(t.hour)}:${pad(t.minute)}`;
}

/** The zone to read a stored users.timezone in: itself when the runtime knows it, else UTC. */
export function zoneOrUtc(zone: string | null | undefined): string {
  return zone && isTimeZone(zone) ? zone : "UTC";
}
