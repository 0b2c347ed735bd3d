// Constant-time comparison of shared secrets (webhook secret, mail push token). Both sides are hashed
// first so that neither the content nor the length of the expected value leaks through timing.

const encoder = new TextEncoder();

/** True when `given` equals `expected`; false for a missing value. Timing does not depend on either. */
export async function secretsEqual(given: string | undefined | null, expected: string): Promise<boolean> {
  const [a, b] = await Promise.all([
    crypto.subtle.digest("SHA-256", encoder.encode(given ?? "")),
    crypto.subtle.digest("SHA-256", encoder.encode(expected)),
  ]);
  return crypto.subtle.timingSafeEqual(a, b) && given !== undefined && given !== null;
}
