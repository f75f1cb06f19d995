// Seeded randomness (test/support/random.ts), so a failing chaos run can be repeated with the seed it printed.
import type { Rand } from '../support/random.js';

export { pick, prng, type Rand } from '../support/random.js';

export const between = (r: Rand, [min, max]: readonly [number, number]) => Math.round(min + r() * (max - min));
export const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
