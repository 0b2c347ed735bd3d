/** The agent's own SQLite, as its `sql` tagged template gives it (bound to the agent): the inbox and the rate
 * limits keep their tables there. */
export type ObjectSql = <T = Record<string, unknown>>(
  strings: TemplateStringsArray,
  ...values: Array<string | number | boolean | null>
) => T[];
