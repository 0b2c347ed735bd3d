// OAuth connections (Gmail): tokens arrive here already sealed by TokenCipher; rows are per person
// and provider, under row-level security like every table.
import { sql } from "drizzle-orm";
import type { Tx } from "../database";
import { oauthConnections } from "../schema";

export interface SealedConnection {
  provider: "google";
  accountEmail: string | null;
  scope: string;
  accessTokenEnc: string;
  refreshTokenEnc: string | null;
  accessTokenExpiresAt: Date | null;
}

/** Creates or refreshes the person's connection to `provider`; a missing refresh token keeps the old one. */
export async function saveConnection(tx: Tx, userId: string, connection: SealedConnection): Promise<void> {
  await tx
    .insert(oauthConnections)
    .values({ userId, ...connection })
    .onConflictDoUpdate({
      target: [oauthConnections.userId, oauthConnections.provider],
      set: {
        accountEmail: connection.accountEmail,
        scope: connection.scope,
        accessTokenEnc: connection.accessTokenEnc,
        refreshTokenEnc: sql`coalesce(excluded.refresh_token_enc, ${oauthConnections.refreshTokenEnc})`,
        accessTokenExpiresAt: connection.accessTokenExpiresAt,
      },
    });
}
